"""negvocab.data.annotations: a dataset's own annotation tables read as a ``read`` table says (text tables with named
columns, CSVs with a header, .mat struct arrays; joins, kept rows, labels), and one-line refusals naming the file,
the key and what is allowed."""

from __future__ import annotations

import pytest

from negvocab.core.errors import InputError
from negvocab.data.annotations import table_images, table_spec
from negvocab.data.benchmarks import benchmark_from_dict, load_benchmarks, open_benchmark, unregister_benchmark
from tests.data.conftest import png

#: Oxford-IIIT Pet's annotations/list.txt opens with '#' lines (its header), then the same rows as test.txt
PETS_LIST = [
    "#Image CLASS-ID SPECIES BREED ID",
    "#ID: 1:37 Class ids",
    "#SPECIES: 1:Cat 2:Dog",
    "#BREED ID: 1-25:Cat 1:12:Dog",
    "#All images with 1st letter as captial are cat images",
    "#images with small first letter are dog images",
    "Abyssinian_100 1 1 1",
    "american_bulldog_100 2 2 1",
    "basset_hound_126 4 2 3",
]
PETS_READ = {"columns": ["image", "class_id", "species", "breed_id"], "file": "image", "suffix": ".jpg",
             "label": "class_id", "label_base": 1}  # fmt: skip


@pytest.fixture
def pets(tmp_path):
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations" / "list.txt").write_text("\n".join(PETS_LIST) + "\n")
    for k, line in enumerate(x for x in PETS_LIST if not x.startswith("#")):
        png(tmp_path / "images" / f"{line.split()[0]}.jpg", k)
    return tmp_path


def test_a_text_table_skips_its_header_and_reads_labels_from_their_base(pets):
    got = table_images(pets / "annotations" / "list.txt", table_spec(PETS_READ, "t"), pets / "images", pets)
    assert got.labels == ["0", "1", "3"] and got.ids == ["Abyssinian_100", "american_bulldog_100", "basset_hound_126"]
    assert got.paths[2] == str(pets / "images" / "basset_hound_126.jpg")
    dogs = table_spec({**PETS_READ, "keep": {"species": "2"}}, "t")
    assert table_images(pets / "annotations" / "list.txt", dogs, pets / "images", pets).labels == ["1", "3"]


@pytest.mark.parametrize(
    ("read", "message"),
    [
        ({**PETS_READ, "colums": []}, r"t: read: unknown key 'colums'; known: file, columns, struct"),
        ({**PETS_READ, "file": ""}, r"t: read: file must name the column"),
        ({**PETS_READ, "label_base": -1}, r"t: read: label_base must be an integer >= 0, got -1"),
        ({**PETS_READ, "label_folder": True}, r"t: read: give label \(a column\) or label_folder = true, not both"),
        ({**PETS_READ, "columns": "image"}, r"t: read: columns must be a list of column names, got 'image'"),
        ({**PETS_READ, "keep": ["species"]}, r"t: read: join and keep must be tables"),
    ],
)
def test_a_bad_read_table_is_refused_in_one_line(read, message):
    with pytest.raises(InputError, match=message):
        table_spec(read, "t")


@pytest.mark.parametrize(
    ("read", "message"),
    [
        ({**PETS_READ, "columns": ["image", "class_id", "species"]},
         r"list\.txt:7: 4 fields, expected 3 \(image class_id species\)"),
        ({**PETS_READ, "label": "breed"}, r"list\.txt: read: label names column 'breed'; the columns: image, class_id"),
        ({**PETS_READ, "keep": {"split": "2"}}, r"list\.txt: read: keep names column 'split'"),
        ({**PETS_READ, "label": "image"}, r"list\.txt:7: label 'Abyssinian_100' is not an integer"),
        ({**PETS_READ, "label_base": 2}, r"list\.txt:7: label 1 is below label_base 2"),
        ({**PETS_READ, "join": {"annotations/trainval.txt": PETS_READ["columns"]}},
         r"trainval\.txt: no such annotation"),
        ({**PETS_READ, "label_names": "classes.txt"}, r"classes\.txt: no such class-name list"),
        ({**PETS_READ, "suffix": ".png"}, r"list\.txt: 3 of 3 listed images do not exist"),
    ],
)  # fmt: skip
def test_a_table_that_does_not_fit_names_the_file_line_and_key(pets, read, message):
    with pytest.raises(InputError, match=message):
        table_images(pets / "annotations" / "list.txt", table_spec(read, "t"), pets / "images", pets)


def test_a_join_needs_every_row_and_label_names_every_class(pets):
    (pets / "annotations" / "species.txt").write_text("Abyssinian_100 cat\namerican_bulldog_100 dog\n")
    joined = {**PETS_READ, "join": {"annotations/species.txt": ["image", "kind"]}}
    with pytest.raises(
        InputError, match=r"species\.txt: no row for image 'basset_hound_126' \(named on .*list\.txt:9\)"
    ):
        table_images(pets / "annotations" / "list.txt", table_spec(joined, "t"), pets / "images", pets)
    (pets / "annotations" / "species.txt").write_text(
        "Abyssinian_100 cat\namerican_bulldog_100 dog\nbasset_hound_126 dog\n"
    )
    named = {**joined, "label": "kind", "label_names": "kinds.txt", "label_base": 0}
    (pets / "kinds.txt").write_text("# the kinds\ncat\n")
    with pytest.raises(InputError, match=r"list\.txt:8: class 'dog' is not in kinds\.txt"):
        table_images(pets / "annotations" / "list.txt", table_spec(named, "t"), pets / "images", pets)
    (pets / "kinds.txt").write_text("# the kinds\ncat\ndog\n")
    got = table_images(pets / "annotations" / "list.txt", table_spec(named, "t"), pets / "images", pets)
    assert got.labels == ["0", "1", "1"]


def test_a_mat_table_names_its_variables_when_the_struct_is_not_one(tmp_path):
    import numpy as np
    from scipy.io import savemat

    savemat(tmp_path / "annos.mat", {"class_names": np.array([["a", "b"]], dtype=object)})
    with pytest.raises(
        InputError, match=r"annos\.mat: read: struct 'annotations' is not a variable of the file; known: class_names"
    ):
        table_images(
            tmp_path / "annos.mat", table_spec({"struct": "annotations", "file": "fname"}, "t"), tmp_path, tmp_path
        )
    with pytest.raises(InputError, match=r"annos\.mat: read: struct 'class_names' is not a struct array"):
        table_images(
            tmp_path / "annos.mat", table_spec({"struct": "class_names", "file": "f"}, "t"), tmp_path, tmp_path
        )
    (tmp_path / "bad.mat").write_text("not matlab")
    with pytest.raises(InputError, match=r"bad\.mat: not a readable \.mat file"):
        table_images(tmp_path / "bad.mat", table_spec({"struct": "a", "file": "f"}, "t"), tmp_path, tmp_path)


def test_a_users_benchmark_file_takes_a_table_layout(pets, tmp_path):
    """A benchmark of the user's own, given as data with layout = "table", opens like the built-in ones."""
    png(pets / "ood" / "x.png", 9)
    spec = tmp_path / "mine.toml"
    spec.write_text(
        'name = "pets-dogs-vs-mine"\ntitle = "t"\n'
        'id = { layout = "table", path = "annotations/list.txt", image_root = "images", '
        'read = { columns = ["image", "class_id", "species", "breed_id"], file = "image", suffix = ".jpg", '
        'keep = { species = "2" } } }\n[ood.mine]\ngroup = "far"\nlayout = "folder"\npath = "ood"\n'
    )
    load_benchmarks(spec)
    try:
        sets = open_benchmark("pets-dogs-vs-mine", pets)
        assert sets.id is not None and len(sets.id) == 2 and sets.id.labels is None and len(sets["mine"]) == 1
    finally:  # a registered set named "mine" (group far) would be every later test's "mine" too
        unregister_benchmark("pets-dogs-vs-mine")


@pytest.mark.parametrize(
    ("id_doc", "message"),
    [
        ({"layout": "table", "path": "a.txt"}, r"benchmark 'b': id: layout 'table' and a read table"),
        ({"layout": "list", "path": "a.txt", "read": {"file": "f"}}, r"benchmark 'b': id: layout 'table' and a read"),
        ({"layout": "table", "path": "a.txt", "read": {"file": "f", "sep": ","}},
         r"benchmark 'b': id: read: unknown key 'sep'"),
    ],
)  # fmt: skip
def test_a_benchmark_refuses_a_table_without_its_read_table(id_doc, message):
    with pytest.raises(InputError, match=message):
        benchmark_from_dict({"name": "b", "id": id_doc, "ood": {"x": {"path": "x", "layout": "folder"}}})


def test_a_benchmark_built_in_python_refuses_a_table_without_its_spec():
    from negvocab.data.benchmarks import Benchmark, BenchmarkSet

    ood = (BenchmarkSet("x", "far", "folder", "x"),)
    with pytest.raises(
        InputError, match=r"benchmark 'b': set 'ID': layout 'table' and read \(a TableSpec\) go together"
    ):
        Benchmark("b", "t", ood, BenchmarkSet("ID", None, "table", "a.txt"))
    spec = table_spec({"file": "f", "columns": ["f"]}, "t")
    assert Benchmark("b", "t", ood, BenchmarkSet("ID", None, "table", "a.txt", read=spec)).id.read == spec
