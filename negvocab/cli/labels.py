"""Label-space commands: ``classes``, ``candidates``, ``filter``, ``merge``, ``drop``, ``info``.

They only parse options, call the public API (negvocab.labels, negvocab.vocab) and print. Bad
input raises :class:`~negvocab.core.errors.InputError` before anything is written; every output is
written atomically.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import io
import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from negvocab.cli.app import app
from negvocab.cli.common_options import PrintedOutputOpt
from negvocab.cli.labelspace import LabelSpaceOptions, say_mapping
from negvocab.cli.logs import is_quiet, verbosity
from negvocab.cli.options import OverwriteOpt, option_group
from negvocab.cli.outputs import check_output, messages_to_stderr, writing
from negvocab.core.atomic import atomic_path, is_stdout, write_json, write_text
from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.labels.candidates import wordnet_candidates
from negvocab.labels.imagenet import imagenet1k
from negvocab.labels.synonyms import SynonymFilter
from negvocab.vocab import Vocabulary

__all__ = [
    "CLASS_FORMATS",
    "candidates",
    "classes",
    "drop",
    "FILTER_EXAMPLES",
    "INFO_DICT_KEYS",
    "INFO_LIST_ITEMS",
    "INFO_TEXT_WIDTH",
    "filter_",
    "grouped_settings_lines",
    "info",
    "merge",
    "removal_summary",
    "vocabulary_summary",
]

CLASS_FORMATS = ("txt", "tsv", "csv", "json")


def _choice(value: str, choices: tuple[str, ...], option: str) -> str:
    """``value`` if it is one of ``choices``; else one line naming them, the closest first."""
    value = value.strip().lower()
    if value not in choices:
        near = difflib.get_close_matches(value, choices, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise InputError(f"{option} must be one of {', '.join(choices)}; got {value!r}{hint}")
    return value


def _table(header: list[str], rows: list[list[Any]], fmt: str) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def _emit(text: str, output: Path | None, what: str, overwrite: bool = False) -> None:
    if output is None:
        typer.echo(text, nl=False)
    else:
        check_output(output, overwrite=overwrite)
        with writing(output):
            write_text(output, text)
        typer.echo(f"wrote {what} to {output}", err=True)


@app.command("classes")
def classes(
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help="txt (one clean name a line), tsv, csv or json; default: the --output suffix, else tsv.",
        ),
    ] = None,
    output: PrintedOutputOpt = None,
    overwrite: OverwriteOpt = False,
) -> None:
    """Print or export the ImageNet-1k label space: wnid, CLIP clean name, WordNet 3.0 synonyms."""
    if fmt is None:  # the output's suffix says it (a file without one gets tsv)
        fmt = (
            "tsv"
            if output is None or not output.suffix
            else _choice(output.suffix.lstrip("."), CLASS_FORMATS, "the --output suffix (or give --format)")
        )
    fmt = _choice(fmt, CLASS_FORMATS, "--format")
    if output is not None:
        check_output(output, overwrite=overwrite)  # before the label space loads
    c = imagenet1k()
    if fmt == "txt":
        text = "".join(f"{name}\n" for name in c.names)
    elif fmt == "json":
        records = [
            {"index": i, "wnid": w, "name": n, "synonyms": list(s)}
            for i, (w, n, s) in enumerate(zip(c.wnids, c.names, c.synonyms, strict=True))
        ]
        text = json.dumps(records, indent=1, ensure_ascii=False) + "\n"
    else:
        rows = [[w, n, "|".join(s)] for w, n, s in zip(c.wnids, c.names, c.synonyms, strict=True)]
        text = _table(["wnid", "name", "synonyms"], rows, fmt)
    _emit(text, output, f"{len(c)} classes", overwrite)


@app.command("candidates")
def candidates(
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="A .txt (one label a line), .tsv/.csv (text, pos, lexname, synset, offset) or .json file.",
        ),
    ],
    preset: Annotated[str, typer.Option("--preset", help="neglabel (no noun.animal, noun.food) or all.")] = "neglabel",
    pos: Annotated[
        str, typer.Option("--pos", help="Parts of speech, e.g. n,a (a includes satellites); v, r also.")
    ] = "n,a",
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="Lexicographer file to leave out (repeatable); replaces the preset's list."),
    ] = None,
    all_lemmas: Annotated[
        bool, typer.Option("--all-lemmas", help="Every lemma name, not just each synset's head word.")
    ] = False,
    keep_unusable: Annotated[
        bool, typer.Option("--keep-unusable", help="Keep single characters and strings without letters.")
    ] = False,
    drop_id: Annotated[
        bool, typer.Option("--drop-id", help="Also remove ImageNet-1k names and their synonyms (synonym filter).")
    ] = False,
    overwrite: OverwriteOpt = False,
) -> None:
    """Export the WordNet 3.0 candidate pool of the WordNet vocabulary (unranked)."""
    check_output(output, overwrite=overwrite)
    suffix = (
        "txt"
        if is_stdout(output)
        else _choice(output.suffix.lstrip(".") or "?", ("txt", "tsv", "csv", "json"), "the --output suffix")
    )
    pool = wordnet_candidates(
        preset, pos=pos, exclude_lexnames=exclude, all_lemmas=all_lemmas, drop_unusable=not keep_unusable
    )
    removed = 0
    if drop_id:
        f = SynonymFilter()
        kept = [c for c in pool if not f.is_id(c.text)]
        removed, pool = len(pool) - len(kept), kept
    if not pool:
        raise InputError("no candidates left with these options; nothing written")
    if suffix == "txt":
        text = "".join(f"{c.text}\n" for c in pool)
    elif suffix == "json":
        rows = [
            {"text": c.text, "pos": c.pos, "lexname": c.lexname, "synset": c.synset, "offset": c.offset} for c in pool
        ]
        text = json.dumps(rows, indent=0, ensure_ascii=False) + "\n"
    else:
        text = _table(
            ["text", "pos", "lexname", "synset", "offset"],
            [[c.text, c.pos, c.lexname, c.synset, c.offset] for c in pool],
            suffix,
        )
    with writing(output):
        write_text(output, text)
    counts = Counter("a" if c.pos == "s" else c.pos for c in pool)
    detail = ", ".join(f"{p}: {n}" for p, n in counts.items())
    extra = f"; {removed} ID labels removed" if drop_id else ""
    source = f"preset {preset}" if exclude is None else f"preset {preset} excluding only {', '.join(exclude)}"
    typer.echo(f"wrote {len(pool)} candidates ({detail}; {source}{extra}) to {output}", err=is_stdout(output))


@app.command("filter")
@option_group("space", LabelSpaceOptions)
def filter_(
    *,
    ctx: typer.Context,
    vocabulary: Annotated[Path, typer.Argument(help="Vocabulary JSON or text file (one label a line).")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Filtered vocabulary (.json, or .txt for labels only).")
    ],
    removed: Annotated[
        Path | None, typer.Option("--removed", help="Also write the removed labels and why, as JSON.")
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", hidden=True, help="The old name of --removed (until the next release).")
    ] = None,
    plurals: Annotated[
        bool, typer.Option("--plurals/--no-plurals", help="Match plural forms (WordNet morphy).")
    ] = True,
    space: LabelSpaceOptions,
    overwrite: OverwriteOpt = False,
) -> None:
    """Remove the ID class names (ImageNet-1k) and their WordNet synonyms from a vocabulary; say why
    (a count and a few examples per rule; -v: every removed label; -q, before or after 'filter': only the
    summary line). Class names of --id-classes are mapped to WordNet synsets first (see 'negvocab
    map-classes'): their synonyms and hyponyms go too."""
    quiet, verbose = is_quiet(ctx), verbosity(ctx) > 0
    report = _renamed_option(report, removed, old="--report", new="--removed", command="filter")
    check_output(output, inputs=[vocabulary, space.id_classes], overwrite=overwrite)
    if report is not None:
        check_output(report, inputs=[vocabulary, space.id_classes], others=[output], overwrite=overwrite)
    vocab = Vocabulary.load(vocabulary)
    classes, mapped = space.open()
    filtered = SynonymFilter(classes, plurals=plurals).apply(vocab)
    say_mapping(mapped)
    summary = filtered.settings["synonym_filter"]
    # the report goes to a temporary file that is renamed only once the output is saved
    with writing(report or output), contextlib.ExitStack() as stack:
        if report is not None:
            with writing(report):
                report_tmp = stack.enter_context(atomic_path(report))
                doc = {"input": str(vocabulary), "input_sha256": vocab.sha256, "output": str(output), **summary}
                write_json(report_tmp, doc)
        with writing(output):
            filtered.save(output)
    with messages_to_stderr(output, report):
        if verbose and not quiet:
            for label, why in summary["removed"].items():
                typer.echo(f"removed {label!r}: {why['name']} ({why['wnid']}) via {why['form']!r} [{why['rule']}]")
        elif not quiet:
            for line in removal_summary(summary["removed"]):
                typer.echo(line)
        rules = Counter(why["rule"] for why in summary["removed"].values())
        detail = ", ".join(f"{rule} {n}" for rule, n in sorted(rules.items()))
        typer.echo(
            f"removed {summary['removed_count']} of {len(vocab)} labels "
            f"({detail or 'none'}); kept {summary['kept_count']} -> {output}"
        )
        _say_caveats(filtered)


#: how many removed labels ``negvocab filter`` shows per rule without -v
FILTER_EXAMPLES = 3


def removal_summary(removed: dict[str, dict[str, str]], examples: int = FILTER_EXAMPLES) -> list[str]:
    """``negvocab filter``'s default lines: per rule, how many labels it removed and the first few, with
    the class each names; then how to see them all (-v) when some are not shown."""
    by_rule: dict[str, list[str]] = {}
    for label, why in removed.items():
        by_rule.setdefault(why["rule"], []).append(f"{label!r} ({why['name']})")
    lines = []
    for rule, labels in sorted(by_rule.items()):
        more = ", ..." if len(labels) > examples else ""
        lines.append(f"  {rule}: {len(labels)}, e.g. {', '.join(labels[:examples])}{more}")
    if any(len(x) > examples for x in by_rule.values()):
        lines.append(f"  (-v lists all {len(removed)} removed labels and why)")
    return lines


def _renamed_option(old_value: Path | None, new_value: Path | None, *, old: str, new: str, command: str) -> Path | None:
    """The value of a renamed option: the new one's, or the old one's with a deprecation line (both: an error)."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise InputError(f"{command}: give {new} or {old} (its old name), not both")
    message = f"{command} {old} is renamed {new}; {old} works until the next release"
    warnings.warn(message, DeprecationWarning, stacklevel=2)
    typer.echo(f"warning: {message}", err=True)
    return old_value


@app.command("merge")
def merge(
    vocabularies: Annotated[list[Path], typer.Argument(help="Vocabulary files, in order of precedence.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The union (.json, or .txt for labels only).")],
    overwrite: OverwriteOpt = False,
) -> None:
    """Union of vocabularies: labels in order of first occurrence, provenance merged."""
    check_output(output, inputs=vocabularies, overwrite=overwrite)
    loaded = [Vocabulary.load(p) for p in vocabularies]
    union = Vocabulary.union(*loaded)
    with writing(output):
        union.save(output)
    parts = ", ".join(f"{p.name} {len(v)} ({v.source})" for p, v in zip(vocabularies, loaded, strict=True))
    with messages_to_stderr(output):
        typer.echo(f"merged {parts} -> {len(union)} unique labels in {output}")
        _say_caveats(union)


def _say_caveats(vocab: Any) -> None:
    """A NOT DEPLOYABLE line per caveat of ``vocab`` (nothing for a deployable one)."""
    for kind, note in vocab.caveats.items():
        typer.echo(f"NOT DEPLOYABLE ({kind}): {note}")


@app.command("drop")
def drop(
    vocabulary: Annotated[Path, typer.Argument(help="Vocabulary JSON or text file.")],
    labels: Annotated[Path, typer.Argument(help="Labels to remove: a text file, one a line ('#' lines skipped).")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The vocabulary without them (.json, or .txt for labels only).")
    ],
    overwrite: OverwriteOpt = False,
) -> None:
    """Remove labels from a vocabulary; the output records what was removed, and keeps its order,
    provenance and caveats (the way to edit a vocabulary file by hand)."""
    check_output(output, inputs=[vocabulary, labels], overwrite=overwrite)
    vocab = Vocabulary.load(vocabulary)
    wanted = [
        s for s in (ln.strip() for ln in read_text(labels, "labels file").splitlines()) if s and not s.startswith("#")
    ]
    if not wanted:
        raise InputError(f"{labels}: no labels to drop (one a line)")
    missing = [x for x in dict.fromkeys(wanted) if x not in vocab]
    if len(missing) == len(set(wanted)):
        raise InputError(
            f"{labels}: none of its {len(set(wanted))} labels is in {vocabulary} (e.g. {missing[0]!r}); nothing to drop"
        )
    out = vocab.drop(wanted, reason=f"negvocab drop {labels.name}")
    with writing(output):
        out.save(output)
    if missing:
        typer.echo(
            f"warning: {len(missing)} labels of {labels} are not in the vocabulary (e.g. {missing[0]!r})", err=True
        )
    with messages_to_stderr(output):
        typer.echo(f"dropped {len(vocab) - len(out)} of {len(vocab)} labels; kept {len(out)} -> {output}")
        _say_caveats(out)


@app.command("info")
def info(
    vocabulary: Annotated[Path, typer.Argument(help="Vocabulary JSON or text file.")],
    show: Annotated[int, typer.Option("--show", "-n", min=0, help="How many labels to list.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Size, source, deployability, per-source counts, hash and settings of a vocabulary file."""
    vocab = Vocabulary.load(vocabulary)
    summary = vocabulary_summary(vocab)
    summary["first_labels"] = vocab.labels[: max(show, 0)]
    if as_json:
        doc = {"file": str(vocabulary), **summary, "settings": vocab.settings}
        typer.echo(json.dumps(doc, indent=1, ensure_ascii=False))
        return
    typer.echo(f"{vocabulary}: {summary['size']} labels, source {summary['source']}, sha256 {vocab.short_hash}")
    typer.echo("deployable: yes" if vocab.deployable else "deployable: NO")
    _say_caveats(vocab)
    if vocab.random_weights:
        typer.echo("WARNING: built with a RANDOM-weight model (a pipeline check): not a real vocabulary")
    typer.echo("per source: " + ", ".join(f"{s} {n}" for s, n in summary["per_source"].items()))
    for line in grouped_settings_lines(vocab.settings):
        typer.echo(line)
    if summary["views"]:
        typer.echo("views: " + ", ".join(f"{k} ({n})" for k, n in summary["views"].items()))
    if summary["first_labels"]:
        more = " ..." if summary["size"] > len(summary["first_labels"]) else ""
        typer.echo("labels: " + ", ".join(_short(x) for x in summary["first_labels"]) + more)
    if vocab.settings:
        typer.echo("(negvocab info --json prints every setting)")


def grouped_settings_lines(settings: dict[str, Any]) -> list[str]:
    """``negvocab info``'s settings in groups, short: a merged vocabulary's parts one line each (source,
    size, hash, model, templates), how the file was made on one line, the other settings below."""
    rest = {k: v for k, v in settings.items() if k not in ("parts", "provenance")}
    parts = [p for p in settings.get("parts") or [] if isinstance(p, dict)]
    lines = [f"parts ({len(parts)}):", *(f"  - {_part_line(p)}" for p in parts)] if parts else []
    if rest:  # one line each: a nested table as its start (--json prints it whole)
        keys = list(rest)[:INFO_DICT_KEYS]
        lines += ["settings:", *(f"  {k}: {_scalar_text(rest[k])}" for k in keys)]
        lines += [f"  ... ({len(rest) - len(keys)} more keys)"] if len(rest) > len(keys) else []
    steps = [p for p in settings.get("provenance") or [] if isinstance(p, dict)]
    if steps:
        earlier = f" (after {len(steps) - 1} earlier steps)" if len(steps) > 1 else ""
        lines.append(f"made by: {_step_line(steps[-1])}{earlier}")
    return lines


def _part_line(part: dict[str, Any]) -> str:
    """One part of a merged vocabulary on one line."""
    inner: dict[str, Any] = part["settings"] if isinstance(part.get("settings"), dict) else {}
    model, templates = inner.get("model"), inner.get("templates")
    text = f"{part.get('source', '?')}: {part.get('size', '?')} labels, sha256 {str(part.get('sha256', ''))[:12]}"
    if isinstance(model, dict):
        weights = "RANDOM weights" if model.get("random_weights") else model.get("pretrained")
        text += f"; model {model.get('name')} ({weights})"
    if isinstance(templates, dict):
        text += f"; templates {templates.get('name')}"
    return text


def _step_line(step: dict[str, Any]) -> str:
    """A provenance step on one line: the command, when, and negvocab's version."""
    command = step.get("command")
    what = " ".join(map(str, command)) if isinstance(command, list) else str(command or "?")
    version = (step.get("versions") or {}).get("negvocab", "?") if isinstance(step.get("versions"), dict) else "?"
    when = f" ({step.get('created', '?')}; negvocab {version})"
    room = INFO_TEXT_WIDTH + 20 - len(when)  # "made by: " and the command in a 120-character line
    return (what if len(what) <= room else what[: room - 3] + "...") + when


def vocabulary_summary(vocab: Any) -> dict[str, Any]:
    """What ``negvocab info`` shows: counts, hash, settings with long values shortened."""
    return {
        "size": len(vocab),
        "source": vocab.source,
        "sha256": vocab.sha256,
        "deployable": vocab.deployable,
        "caveats": vocab.caveats,
        "per_source": vocab.source_counts(),
        "settings": {k: _short(v) for k, v in vocab.settings.items()},
        "views": {k: len(v) for k, v in vocab.views.items()},
    }


#: ``negvocab info``: a list longer than this shows its length and its first few items
INFO_LIST_ITEMS = 5
#: ``negvocab info``: a mapping with more keys shows its first few (a filter's removed labels, per-class views)
INFO_DICT_KEYS = 12
#: ``negvocab info``: longer strings are cut (hashes, prompts); ``--json`` prints everything
INFO_TEXT_WIDTH = 80


def _scalar_text(value: Any) -> str:
    """One settings value on one line: a long list by its length and first items, long text cut."""
    if isinstance(value, (list, tuple)):
        items = [_scalar_text(x) for x in value[:INFO_LIST_ITEMS]]
        if len(value) > INFO_LIST_ITEMS:
            return f"[{len(value)} items: {', '.join(items)}, ...]"
        return "[" + ", ".join(items) + "]"
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)
    return text if len(text) <= INFO_TEXT_WIDTH else text[: INFO_TEXT_WIDTH - 3] + "..."


def _short(value: Any) -> Any:
    """A settings value fit for one line: scalars as they are, containers by size and keys."""
    if isinstance(value, dict):
        if "removed_count" in value and "kept_count" in value:  # the synonym filter's record
            return f"removed {value['removed_count']}, kept {value['kept_count']}"
        return (
            "{"
            + ", ".join(f"{k}: {_short(v)}" for k, v in list(value.items())[:6])
            + (", ..." if len(value) > 6 else "")
            + "}"
        )
    if isinstance(value, list):
        return f"[{len(value)} items]" if len(value) > 4 else [_short(v) for v in value]
    if isinstance(value, str) and len(value) > 80:
        return value[:77] + "..."
    return value
