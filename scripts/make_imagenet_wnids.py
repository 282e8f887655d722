"""Generate negvocab/resources/imagenet1k_classes.tsv: the ImageNet-1k label space, run once.

The 1000 wnids in the standard ILSVRC-2012 class order (sorted wnids, n01440764 tench ...
n15075141 toilet tissue) come from timm's ``imagenet_synsets.txt``; the CLIP clean names from
open_clip's ``IMAGENET_CLASSNAMES`` (same order); the synonyms are the lemma names of each wnid's
WordNet 3.0 synset (underscores -> spaces, ``|``-separated), stored so that ``imagenet1k()`` needs
neither open_clip nor WordNet at run time (the tests check all three columns). The script checks the
list before writing it: 1000 unique sorted wnids, each a WordNet 3.0 noun offset, first tench and
last toilet tissue.

    python scripts/make_imagenet_wnids.py            # (re)write the file
    python scripts/make_imagenet_wnids.py --check    # verify the committed file, write nothing
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "negvocab" / "resources" / "imagenet1k_classes.tsv"


def build() -> str:
    import open_clip.zero_shot_metadata as meta
    import timm

    from negvocab.labels.wordnet import load_wordnet

    wnids = (Path(timm.__file__).parent / "data" / "_info" / "imagenet_synsets.txt").read_text().split()
    names = list(meta.IMAGENET_CLASSNAMES)
    assert len(wnids) == 1000 and len(set(wnids)) == 1000, "expected 1000 unique wnids"
    assert wnids == sorted(wnids), "the standard class order is the sorted wnids"
    assert len(names) == 1000, "expected 1000 open_clip class names"
    wn = load_wordnet()
    lemmas = [wn.synset_from_pos_and_offset("n", int(w[1:])).lemma_names() for w in wnids]
    assert lemmas[0][0] == "tench" and names[0] == "tench"
    assert lemmas[-1][0] == "toilet_tissue" and names[-1] == "toilet paper"
    synonyms = ["|".join(lemma.replace("_", " ") for lemma in ls) for ls in lemmas]
    assert all(n.strip() == n and not set(n) & set("\t|") for n in names)
    assert not any(set(lemma) & set("\t|") for ls in lemmas for lemma in ls)
    rows = zip(wnids, names, synonyms, strict=True)
    return "wnid\tname\tsynonyms\n" + "".join(f"{w}\t{n}\t{s}\n" for w, n, s in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file")
    args = parser.parse_args()
    text = build()
    if args.check:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print(f"{OUT}: {'up to date' if same else 'DIFFERS'}")
        return 0 if same else 1
    from negvocab.core.atomic import write_text

    write_text(OUT, text)
    print(f"wrote {OUT} (1000 classes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
