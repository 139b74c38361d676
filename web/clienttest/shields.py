"""Checks the shields.io endpoint badges (/badge/ID.json) against the
endpoint schema: python shields.py BASE ID..."""

import json
import pathlib
import sys
import urllib.request

import jsonschema

schema = json.loads((pathlib.Path(__file__).parent / "testdata" / "shields-endpoint.schema.json").read_text())
validator = jsonschema.Draft202012Validator(schema)
base, ids = sys.argv[1], sys.argv[2:]
errors, n = [], 0
for i in ids:
    for q in ("", "?target=cpu", "?mode=train", "?label=%3Cx%3E"):
        url = f"{base}/badge/{i}.json{q}"
        with urllib.request.urlopen(url, timeout=30) as r:
            doc = json.loads(r.read())
        n += 1
        errors += [f"{url}: {'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
for e in errors:
    print(e)
print(f"shields endpoint schema: {n} badges, {len(errors)} errors")
sys.exit(1 if errors else 0)
