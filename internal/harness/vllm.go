package harness

import _ "embed"

// VLLMRegistryScript is vllm/registry.py: it reads vLLM's model registry
// out of a vllm wheel with Python's ast, importing nothing of vllm
// (internal/serving runs it). It lives in a folder of its own so that it is
// no part of the probe's harness files (their Digest keys every result's
// runtime).
//
//go:embed vllm/registry.py
var VLLMRegistryScript []byte
