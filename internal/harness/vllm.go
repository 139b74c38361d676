package harness

import "embed"

// VLLM holds the programs of internal/serving, in a folder of their own so
// that they are no part of the probe's harness files (their Digest keys
// every result's runtime):
//   - vllm/registry.py reads vLLM's model registry out of a vllm wheel
//     with Python's ast, importing nothing of vllm (serving/wheel);
//   - vllm/serve.py is the serving probe, run in the vLLM-TorchTPU
//     interpreter, and vllm/reference.py its transformers CPU reference,
//     run in the project's (serving/measure);
//   - vllm/serving.json is the serving probe's table (serve.py and
//     serving/measure read it).
//
//go:embed vllm/*.py vllm/*.json
var VLLM embed.FS

// VLLMRegistryScript is vllm/registry.py.
var VLLMRegistryScript = must(VLLM.ReadFile("vllm/registry.py"))
