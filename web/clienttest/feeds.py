"""Reads the served feeds as their clients do: the Atom feed with feedparser
(no "bozo" error, Atom 1.0, every entry with an id, a title, a link and a
date) and the JSON Feed against the JSON Feed 1.1 schema, unfiltered and
under every filter (each kind, each target, an org, one and two models).

    python feeds.py BASE MODEL_ID OTHER_MODEL_ID
"""

import itertools
import json
import pathlib
import sys
import urllib.request

import feedparser
import jsonschema

KINDS = ["regression", "fix", "new", "change", "flaky", "train_regression", "train_fix", "runtime"]


def fetch(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        if r.status != 200:
            raise SystemExit(f"GET {url}: {r.status}")
        return r.read()


def main():
    base, model, other = sys.argv[1:4]
    org = model.split("/")[0]
    filters = [""] + [f"kind={k}" for k in KINDS] + [f"target={t}" for t in ("tpu", "cpu", "cuda", "auto")]
    filters += [f"org={org}", f"model={model}", f"model={model}&model={other}", f"org={org}&target=tpu&kind=regression&kind=fix"]
    schema = json.loads((pathlib.Path(__file__).parent / "testdata" / "jsonfeed-1.1.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors, atom_entries, json_items = [], 0, 0
    for q in filters:
        url = f"{base}/feed.atom" + (f"?{q}" if q else "")
        d = feedparser.parse(fetch(url))
        if d.bozo:
            errors.append(f"{url}: feedparser: {d.bozo_exception!r}")
        if d.version != "atom10":
            errors.append(f"{url}: feedparser reads version {d.version!r}, want atom10")
        for e in d.entries:
            for field in ("id", "title", "link", "updated"):
                if not e.get(field):
                    errors.append(f"{url}: an entry without {field}: {e.get('id')}")
        atom_entries += len(d.entries)
        url = f"{base}/feed.json" + (f"?{q}" if q else "")
        doc = json.loads(fetch(url))
        for err in validator.iter_errors(doc):
            errors.append(f"{url}: JSON Feed 1.1: {'/'.join(map(str, err.absolute_path))}: {err.message}")
        json_items += len(doc.get("items", []))
    if atom_entries == 0 or json_items == 0:
        errors.append(f"the feeds have no entries ({atom_entries} Atom, {json_items} JSON): nothing was checked")
    for e in errors:
        print(e)
    print(f"{len(filters)} filters: {atom_entries} Atom entries, {json_items} JSON Feed items, {len(errors)} errors")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
