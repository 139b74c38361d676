"""Read vLLM's model registry from a vllm wheel without importing vllm.

usage: python registry.py WHEEL

vllm/model_executor/models/registry.py maps each Hugging Face architecture
name (config.json's "architectures") to the module and class that implement
it, in dicts of plain literals (_TEXT_GENERATION_MODELS, _EMBEDDING_MODELS,
...). This program reads that file out of the wheel (a zip) and walks its
syntax tree with ast: nothing of vllm is imported or run. It prints one JSON
object:

  {"vllm_version": "0.29.0",
   "tables": {"_TEXT_GENERATION_MODELS": [["LlamaForCausalLM", "llama", "LlamaForCausalLM"], ...], ...}}

Every top-level NAME = {...} whose name ends in _MODELS is a table; an entry
is kept when its key is a string and its value a tuple of two strings. The
"**" entries (another table spread into this one, or a comprehension over
one) are not literals and are left out: what they add is listed in the
table they come from. Which table means which kind of model is decided by
the caller (internal/serving), not here. Exit status 2 with a message on
stderr when the wheel or the file cannot be read.
"""

import ast
import json
import sys
import zipfile

REGISTRY = "vllm/model_executor/models/registry.py"
VERSION = "vllm/_version.py"


def _version(tree):
    """__version__ = version = '0.29.0' in vllm/_version.py."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if "__version__" in names and isinstance(node.value.value, str):
                return node.value.value
    return None


def _entry(key, value):
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return None
    if not isinstance(value, ast.Tuple) or len(value.elts) != 2:
        return None
    parts = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if len(parts) != 2:
        return None
    return [key.value, parts[0], parts[1]]


def tables(source):
    """The registry's tables: name -> [[architecture, module, class], ...]."""
    out = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id.endswith("_MODELS"):
                rows = [_entry(k, v) for k, v in zip(node.value.keys, node.value.values)]
                out[target.id] = [r for r in rows if r is not None]
    return out


def read(wheel):
    with zipfile.ZipFile(wheel) as z:
        source = z.read(REGISTRY).decode("utf-8")
        try:
            version = _version(ast.parse(z.read(VERSION).decode("utf-8")))
        except KeyError:
            version = None
    return {"vllm_version": version, "tables": tables(source)}


def main(argv):
    if len(argv) != 2:
        print("usage: registry.py WHEEL", file=sys.stderr)
        return 2
    try:
        out = read(argv[1])
    except (OSError, KeyError, zipfile.BadZipFile, SyntaxError, UnicodeDecodeError) as e:
        print(f"registry.py: {argv[1]}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
