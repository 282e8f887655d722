"""The demo's sample images ship with negvocab: the same bytes as the files it used to read from
matplotlib, scikit-learn, sympy and scipy (so its results are unchanged), and no need of those packages."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from pathlib import Path

import pytest

from negvocab.demo.pipeline import _GRAPHICS, _PHOTOS
from tests.core.test_extras import run_without

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "negvocab" / "resources" / "demo"
# where each shipped file came from: (package, path inside it), written by hand from the old demo.py
ORIGINS = {
    "photos/grace_hopper.jpg": ("matplotlib", "mpl-data/sample_data/grace_hopper.jpg"),
    "photos/china.jpg": ("sklearn", "datasets/images/china.jpg"),
    "photos/flower.jpg": ("sklearn", "datasets/images/flower.jpg"),
    "graphics/sample_data_logo2.png": ("matplotlib", "mpl-data/sample_data/logo2.png"),
    "graphics/sample_data_Minduka_Present_Blue_Pack.png": (
        "matplotlib",
        "mpl-data/sample_data/Minduka_Present_Blue_Pack.png",
    ),
    "graphics/images_matplotlib_large.png": ("matplotlib", "mpl-data/images/matplotlib_large.png"),
    "graphics/tests_test_region_and.png": ("sympy", "plotting/tests/test_region_and.png"),
    "graphics/tests_test_region_or.png": ("sympy", "plotting/tests/test_region_or.png"),
    "graphics/tests_test_region_xor.png": ("sympy", "plotting/tests/test_region_xor.png"),
    "graphics/tests_dots.png": ("scipy", "ndimage/tests/dots.png"),
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_shipped_image_is_listed_with_its_licence():
    shipped = {f"photos/{n}" for n in _PHOTOS} | {f"graphics/{n}" for n in _GRAPHICS}
    assert shipped == set(ORIGINS)
    on_disk = {str(p.relative_to(DEMO)) for p in DEMO.rglob("*") if p.suffix in (".png", ".jpg")}
    assert on_disk == shipped
    notice = (DEMO / "NOTICE.md").read_text(encoding="utf-8")
    for rel, (_, inside) in ORIGINS.items():
        row = next((ln for ln in notice.splitlines() if f"`{rel}`" in ln), "")
        assert inside in row and ("licence" in row or "BSD" in row or "CC BY" in row), rel


@pytest.mark.parametrize("rel", sorted(ORIGINS))
def test_the_shipped_bytes_are_the_packages_file(rel):
    """Where the package that held the file is installed, its copy is byte for byte the shipped one."""
    package, inside = ORIGINS[rel]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed here")
    original = Path(next(iter(spec.submodule_search_locations))) / inside
    if not original.is_file():
        pytest.skip(f"{package} no longer ships {inside}")
    assert _sha(DEMO / rel) == _sha(original)


def test_the_sample_images_need_none_of_those_packages(tmp_path):
    code = (
        "from negvocab.demo import prepare_sample_images\n"
        "i, o = prepare_sample_images('imgs')\n"
        "print(sorted(p.name for p in i.iterdir())); print(sorted(p.name for p in o.iterdir()))\n"
    )
    r = run_without([], tmp_path, absent=("matplotlib", "sklearn", "scipy", "sympy"), code=code)
    assert r.returncode == 0, r.stderr[-2000:]
    ids, oods = r.stdout.splitlines()
    stems = ("grace_hopper", "china", "flower")
    assert ast.literal_eval(ids) == sorted(f"{s}{c}.png" for s in stems for c in ("", "_crop0", "_crop1", "_crop2"))
    assert ast.literal_eval(oods) == sorted(_GRAPHICS)  # the names the demo always wrote
