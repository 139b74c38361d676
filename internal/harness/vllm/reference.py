"""The serving probe's reference: transformers' greedy tokens on the CPU, in float32, in the project's
interpreter (--python).

usage: python reference.py MODEL_DIR TABLE_JSON HARNESS_DIR OUT_JSON

Encodes harness_real_inputs.PROMPT with the model's tokenizer (harness_real_inputs.prompt_ids, as the generate stage
does), generates the table's max_tokens tokens greedily and writes {"prompt_token_ids": [...], "tokens":
[...]} to OUT_JSON; on a failure, {"error": message} and exit status 1.
"""

import json
import sys


def main(argv):
    model_dir, table, harness, out = argv[1], json.load(open(argv[2])), argv[3], argv[4]
    sys.path.insert(0, harness)
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        import harness_real_inputs

        tok = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        ids = harness_real_inputs.prompt_ids(torch, tok, model.config)
        if ids is None:
            raise ValueError(
                f"the fixed prompt {harness_real_inputs.PROMPT!r} cannot be encoded by the model's tokenizer"
            )
        with torch.no_grad():
            seq = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=table["max_tokens"],
                                 do_sample=False, pad_token_id=tok.pad_token_id or tok.eos_token_id)
        res = {"prompt_token_ids": ids[0].tolist(), "tokens": seq[0, ids.shape[1]:].tolist()}
    except Exception as e:  # noqa: BLE001 - reported to the caller
        with open(out, "w") as f:
            json.dump({"error": f"{type(e).__name__}: {e}"[:2000]}, f)
        return 1
    with open(out, "w") as f:
        json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
