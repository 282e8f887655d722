"""`build wordnet --candidates FILE` records the file's SHA-256, the ID classes and the command line."""

from __future__ import annotations

import hashlib

from typer.testing import CliRunner

from negvocab.vocab import Vocabulary
from tests.builders.test_wordnet import CANDIDATES, wn_vlm  # noqa: F401  (wn_vlm: the fixture)


def test_the_candidate_file_is_hashed(wn_vlm, tmp_path, monkeypatch):  # noqa: F811
    import negvocab.cli.build_wordnet as cmd
    from negvocab.cli import app

    monkeypatch.setattr(cmd, "load_vlm", lambda *a, **k: wn_vlm)
    pool = tmp_path / "pool.txt"
    pool.write_text("".join(f"{c.text}\n" for c in CANDIDATES), encoding="utf-8")
    out = tmp_path / "wn.json"
    result = CliRunner().invoke(
        app, ["build", "wordnet", "--random-weights", "--candidates", str(pool), "-t", "single", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    vocab = Vocabulary.load(out)
    assert vocab.settings["candidates_sha256"] == hashlib.sha256(pool.read_bytes()).hexdigest()
    import negvocab

    assert vocab.settings["id_class_list"]["wnids"] == list(negvocab.imagenet1k().wnids)  # ranked against these
    written = vocab.settings["provenance"][-1]
    assert written["command"][:3] == ["negvocab", "build", "wordnet"] and written["versions"]["open_clip"]
