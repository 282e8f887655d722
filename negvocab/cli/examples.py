"""Examples shown at the end of every command's ``--help`` (one place, so that they stay consistent)."""

from __future__ import annotations

from negvocab.builders.registry import get_builder, list_builders

__all__ = ["EXAMPLES", "epilog"]

EXAMPLES: dict[str, list[str]] = {
    "cache": ["negvocab cache", "negvocab cache --clear"],
    "coverage": [
        "negvocab coverage -m ViT-B-16 -p openai --vocab vocab.json --id images/id --ood ood_labelled.csv -o coverage/"
    ],
    "demo": [
        "negvocab demo --random-weights --n-candidates 300 -o negvocab-demo",
        "negvocab demo -m ViT-B-16 --pretrained openai",
    ],
    "methods": ["negvocab methods -s conventions", "negvocab methods -o methods.md"],
    "published": ["negvocab published --method negrefine", "negvocab published -m ViT-B-16 --csv"],
    "models": ["negvocab models --preset paper8", "negvocab models --grep siglip2"],
    "embed": [
        "negvocab embed -m ViT-B-16 -p openai --classes -o emb/id",
        "negvocab embed -m ViT-B-16 -p openai --images images/ood -o emb/ood",
    ],
    "classes": ["negvocab classes -o classes.csv"],
    "candidates": ["negvocab candidates --preset neglabel -o pool.tsv"],
    "filter": [
        "negvocab filter vocab.json -o vocab.clean.json --removed removed.json",
        "negvocab -q filter pool.tsv -o pool.clean.json",
    ],
    "merge": ["negvocab merge wordnet.json gpt.json -o union.json"],
    "drop": ["negvocab drop vocab.json unwanted.txt -o vocab.dropped.json"],
    "info": ["negvocab info vocab.json -n 5"],
    "map-classes": [
        "negvocab map-classes classes.txt --hint bird -o classes.pinned.txt",
        "negvocab map-classes cifar100",
    ],
    "report": ["negvocab report results/ -o report.html"],
    "score": [
        "negvocab score -m ViT-B-16 -p openai "
        "--id images/id --ood ninco=images/ninco --vocab wordnet.json --method neglabel -o results/"
    ],
    "sweep": [
        "negvocab sweep -m ViT-B-16 -p openai "
        "--id images/id --ood images/ood --vocab wordnet.json --sizes 50,100,200 -o sweep/"
    ],
    "subsample": ["negvocab subsample results/ --sizes 2,4 --draws 1000 -o subsample/"],
    "grid init": ["negvocab grid init grid.toml"],
    "grid run": ["negvocab grid run grid.toml --random-weights -o grid-out"],
    "grid status": ["negvocab grid status grid-out"],
    "grid plan": ["negvocab grid plan grid.toml --random-weights --workers 1,8,64"],
    "table": [
        "negvocab table grid-out --rows model --cols vocabulary --where ood_set=mean --where method=neglabel "
        "--metric fpr,auroc -o table2.md",
        "negvocab table results/ --rows method --where vocabulary=wordnet",
    ],
    "benchmarks": ["negvocab benchmarks --root data/openood"],
}

# each builder's examples are its registry entry's (negvocab.cli.build_generic adds those of builders registered later)
EXAMPLES.update({f"build {n}": list(get_builder(n).examples) for n in list_builders() if get_builder(n).examples})


def epilog(path: str) -> str | None:
    """The ``Examples:`` block of the command ``path`` (``"build wordnet"``), or None."""
    lines = EXAMPLES.get(path)
    if not lines:
        return None
    return "Examples:\n\n" + "\n\n".join(f"  $ {line}" for line in lines)
