"""Image-set layouts: ImageNet val (class folders, flat + ground truth), Fi-ImageNet-1k lists,
plain folders and class folders, on tiny generated images."""

from __future__ import annotations

import logging

import pytest
from PIL import Image

import negvocab
from negvocab.core.errors import InputError
from negvocab.data import (
    class_folders,
    fi_imagenet,
    image_folder,
    imagenet_val,
    open_image_set,
    read_ground_truth,
    read_id_list,
)


def _img(path, color=(200, 10, 10)):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (16, 16), color).save(path)
    return path


def vid(i: int) -> str:
    return f"ILSVRC2012_val_{i:08d}"


@pytest.fixture
def wnids():
    return list(negvocab.imagenet1k().wnids)


@pytest.fixture
def val_classes(tmp_path, wnids):
    """12 validation images in class folders: image i in class (i % 3)."""
    root = tmp_path / "val"
    for i in range(1, 13):
        _img(root / wnids[i % 3] / f"{vid(i)}.JPEG")
    return root


@pytest.fixture
def val_flat(tmp_path):
    root = tmp_path / "flat"
    for i in range(1, 7):
        _img(root / f"{vid(i)}.JPEG")
    return root


def test_imagenet_class_folder_layout(val_classes, wnids):
    s = imagenet_val(val_classes)
    assert len(s) == 12 and s.info["layout"] == "class-folders"
    lab = dict(zip(s.ids, s.labels, strict=True))
    assert lab[vid(4)] == wnids[1] and lab[vid(12)] == wnids[0]


def test_imagenet_flat_with_loc_csv(val_flat, wnids):
    rows = ["ImageId,PredictionString"] + [
        f"{vid(i)},{wnids[i * 7]} 1 2 3 4 {wnids[i * 7]} 5 6 7 8" for i in range(1, 7)
    ]
    (val_flat / "LOC_val_solution.csv").write_text("\n".join(rows) + "\n")
    s = imagenet_val(val_flat)  # found automatically in the folder
    assert s.info["layout"] == "flat" and s.labels == [wnids[i * 7] for i in range(1, 7)]


@pytest.mark.parametrize("base", [0, 1])
def test_imagenet_flat_with_index_per_line(val_flat, tmp_path, wnids, base):
    gt = tmp_path / "gt.txt"
    gt.write_text("".join(f"{i * 100 + base}\n" for i in range(1, 7)))
    s = imagenet_val(val_flat, ground_truth=gt, index_base=base)
    assert s.labels == [wnids[i * 100] for i in range(1, 7)]


def test_ground_truth_errors(val_flat, tmp_path):
    with pytest.raises(InputError, match="no such ground-truth"):
        imagenet_val(val_flat, ground_truth=tmp_path / "nope.txt")
    short = tmp_path / "short.txt"
    short.write_text("1\n2\n")
    with pytest.raises(InputError, match="no label for 4 images"):
        imagenet_val(val_flat, ground_truth=short)
    bad = tmp_path / "bad.txt"
    bad.write_text("1000\n")
    with pytest.raises(InputError, match="out of range"):
        read_ground_truth(bad)
    junk = tmp_path / "junk.txt"
    junk.write_text("cat\n")
    with pytest.raises(InputError, match="class index"):
        read_ground_truth(junk)
    gap = tmp_path / "gap.txt"  # a blank line would shift every later image's label
    gap.write_text("1\n2\n\n3\n\n")
    with pytest.raises(InputError, match=r"gap.txt:3: blank line"):
        read_ground_truth(gap)
    gap.write_text("1\n2\n3\n\n\n")  # trailing blank lines are fine
    assert len(read_ground_truth(gap)) == 3
    devkit = tmp_path / "ILSVRC2012_validation_ground_truth.txt"
    devkit.write_text("490\n361\n")
    with pytest.raises(InputError, match="devkit's file numbers classes by its own ILSVRC2012_ID"):
        read_ground_truth(devkit)


def test_imagenet_flat_without_ground_truth_is_unlabelled(val_flat):
    assert imagenet_val(val_flat).labels is None


def test_missing_and_empty_folders(tmp_path):
    with pytest.raises(InputError, match="no such"):
        imagenet_val(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no ImageNet validation images"):
        imagenet_val(tmp_path / "empty")
    with pytest.raises(InputError, match="no image files"):
        image_folder(tmp_path / "empty")
    with pytest.raises(InputError, match="no images in class folders"):
        class_folders(tmp_path / "empty")
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(InputError, match="found a file"):
        image_folder(f)


def test_fi_imagenet_split(val_classes, tmp_path, caplog):
    ood = tmp_path / "ood.csv"
    ood.write_text(f'image,label\n{vid(2)},sea slug\n{vid(5)}.JPEG,"kite, toy"\n{vid(99)},missing one\n')
    amb = tmp_path / "ambiguous.txt"
    amb.write_text(f"# ambiguous\nval/{vid(7)}.JPEG\n{vid(8)}\n{vid(98)}\n")
    with caplog.at_level(logging.WARNING):
        fi = fi_imagenet(val_classes, ood, amb)
    assert fi.ood.ids == [vid(2), vid(5)] and fi.ood.labels == ["sea slug", "kite, toy"]
    assert fi.ambiguous == [vid(7), vid(8)]
    assert fi.not_found == [vid(99), vid(98)]
    assert "not in" in caplog.text
    assert len(fi.id) == 12 - 4 and not {vid(2), vid(5), vid(7), vid(8)} & set(fi.id.ids)
    assert all(p.endswith(".JPEG") for p in fi.ood.paths)


def test_read_id_list_formats(tmp_path):
    tsv = tmp_path / "l.tsv"
    tsv.write_text(f"id\tlabel\n{vid(1)}\tpaper towel holder\n{vid(2)}\t\n")
    assert read_id_list(tsv) == {vid(1): "paper towel holder", vid(2): None}
    txt = tmp_path / "l.txt"
    txt.write_text(f"{vid(3)} sea lion\n/data/val/{vid(4)}.JPEG\n{vid(3)} other\n")
    assert read_id_list(txt) == {vid(3): "sea lion", vid(4): None}
    # plain text keeps commas and leading dots in labels; a comma right after every id means CSV
    txt.write_text(f"{vid(1)} sea cucumber, holothurian\n{vid(5)}: .22 rifle\n{vid(6)}.JPEG\n")
    assert read_id_list(txt) == {vid(1): "sea cucumber, holothurian", vid(5): ".22 rifle", vid(6): None}
    txt.write_text(f'{vid(1)}.JPEG,"sea cucumber, holothurian",n02321529\n{vid(2)} ,kite\n')
    assert read_id_list(txt) == {vid(1): "sea cucumber, holothurian", vid(2): "kite"}
    empty = tmp_path / "none.txt"
    empty.write_text("header only\n")
    with pytest.raises(InputError, match="no image ids"):
        read_id_list(empty)
    with pytest.raises(InputError, match="no such image-list"):
        read_id_list(tmp_path / "absent.csv")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("mixed.txt", "{1},sea cucumber\n{2} kite\n", {1: "sea cucumber", 2: "kite"}),
        ("commas.txt", "{1},sea cucumber, holothurian\n{2},kite\n", {1: "sea cucumber, holothurian", 2: "kite"}),
        ("wnid.csv", "image,wnid,label\n{1},n01440764,sea cucumber\n", {1: "sea cucumber"}),
        ("label_first.csv", "label,image\nsea cucumber,{1}.JPEG\n", {1: "sea cucumber"}),
        ("semicolon.csv", "image;label\n{1};sea cucumber\n", {1: "sea cucumber"}),
        ("space in path.txt", "/data/my imagenet/val/{1}.JPEG sea cucumber\n", {1: "sea cucumber"}),
        ("numbers.txt", "{1}\t12\tsea slug\n", {1: "sea slug"}),
        (
            "header_unquoted.csv",
            "image_id,label\n{1},sea cucumber, holothurian\n{2},kite,\n",
            {1: "sea cucumber, holothurian", 2: "kite"},
        ),
        ("header_score.csv", "image_id,label\n{1},kite,0.93\n{2},sea slug,n01234567\n", {1: "kite", 2: "sea slug"}),
        ("header_empty_label.csv", "image_id,label\n{1},,kite\n", {1: "kite"}),
    ],
)
def test_fi_lists_as_people_write_them(tmp_path, name, text, expected):
    f = tmp_path / name
    f.write_text(text.format(*[vid(i) for i in range(3)]))
    assert read_id_list(f) == {vid(i): label for i, label in expected.items()}


def test_fi_imagenet_with_no_id_found_is_an_error(val_classes, tmp_path):
    lst = tmp_path / "ood.txt"
    lst.write_text(f"{vid(500)}\n")
    with pytest.raises(InputError, match="none of its 1 ids"):
        fi_imagenet(val_classes, lst)


def test_class_folders_ninco_layout(tmp_path, caplog):
    root = tmp_path / "NINCO"
    _img(root / "fox_squirrel" / "a.jpg")
    _img(root / "fox_squirrel" / "b.png")
    _img(root / "sea_anemone" / "sub" / "c.jpeg")
    (root / "empty_class").mkdir()
    _img(root / "stray.jpg")
    with caplog.at_level(logging.WARNING):
        s = class_folders(root)
    assert s.labels == ["fox squirrel", "fox squirrel", "sea anemone"]
    assert s.label_names() == ["fox squirrel", "sea anemone"]
    assert "outside class folders" in caplog.text


def test_open_image_set_detects_layouts(tmp_path, val_classes):
    assert open_image_set(val_classes).info["layout"] == "class-folders"
    # an ImageNet-layout folder is named as the user or the folder says (an OOD export is not "ImageNet-1k val")
    assert open_image_set(val_classes).name == val_classes.name
    assert open_image_set(val_classes, name="Fi OOD").name == "Fi OOD"
    assert open_image_set(val_classes, layout="imagenet", name="Fi OOD").name == "Fi OOD"
    flat = tmp_path / "imgs"
    _img(flat / "x.png")
    _img(flat / "deep" / "y.png")
    s = open_image_set(flat)
    assert s.info["layout"] == "folder" and s.ids == ["deep/y", "x"] and s.labels is None
    cls = tmp_path / "cls"
    _img(cls / "a" / "1.png")
    assert open_image_set(cls).labels == ["a"]
    with pytest.raises(InputError, match="layout"):
        open_image_set(cls, layout="zip")


def test_verify_reports_corrupt_images(tmp_path):
    root = tmp_path / "imgs"
    _img(root / "good.png")
    (root / "broken.jpg").write_bytes(b"not a jpeg at all")
    (root / "notes.txt").write_text("ignored: not an image extension")
    s = image_folder(root)
    assert len(s) == 2
    ok, bad = s.verify()
    assert ok.ids == ["good"] and len(bad) == 1 and bad[0][0].endswith("broken.jpg")


# -- image lists ------------------------------------------------------------------------------
@pytest.fixture
def listed(tmp_path):
    """Three images under data/ with a space in one name, and the folder lists live in."""
    data = tmp_path / "data"
    for rel in ("a/one.jpg", "a/two words.png", "b/three.jpg"):
        _img(data / rel)
    (tmp_path / "lists").mkdir()
    return data, tmp_path / "lists"


def test_openood_style_list_with_labels_and_a_root(listed):
    from negvocab.data import image_list

    data, lists = listed
    f = lists / "test_ood.txt"
    f.write_text("# OpenOOD imglist\na/one.jpg 3\n\na/two words.png 7\nb/three.jpg\t12\n")
    s = open_image_set(f, image_root=data)
    assert s.paths == [str(data / "a/one.jpg"), str(data / "a/two words.png"), str(data / "b/three.jpg")]
    assert s.labels == ["3", "7", "12"] and s.ids == ["a/one", "a/two words", "b/three"]
    assert s.info["layout"] == "list" and s == image_list(f, root=data)


def test_multi_word_labels_of_a_path_label_list_are_whole(listed):
    """Issue 34: "sp/g0.png kite string" was read as the path "sp/g0.png kite" (and the error blamed the root)."""
    data, lists = listed
    f = lists / "words.txt"
    f.write_text("a/one.jpg kite string\na/two words.png great white shark\nb/three.jpg 5\n")
    s = open_image_set(f, image_root=data)
    assert s.paths == [str(data / "a/one.jpg"), str(data / "a/two words.png"), str(data / "b/three.jpg")]
    assert s.labels == ["kite string", "great white shark", "5"]


def test_plain_list_relative_to_its_folder_has_no_labels(listed):
    data, _ = listed
    f = data / "all.lst"
    f.write_text("a/two words.png\nb/three.jpg\n" + str(data / "a/one.jpg") + "\n")
    s = open_image_set(f)
    assert s.labels is None and len(s) == 3 and s.paths[2] == str(data / "a/one.jpg")


def test_csv_list_with_header(listed):
    data, lists = listed
    f = lists / "set.csv"
    f.write_text("\ufeffImage,label\na/one.jpg,cat\nb/three.jpg,\n")
    s = open_image_set(f, image_root=data)
    assert s.labels == ["cat", ""] and s.paths[1] == str(data / "b/three.jpg")


@pytest.mark.parametrize(
    ("text", "suffix", "message"),
    [
        (
            "a/one.jpg\nnope.jpg\n",
            ".txt",
            r"1 of 2 listed images do not exist \(first: .*nope.jpg\).*pass the right root$",
        ),
        ("# nothing\n\n", ".txt", "names no images"),
        ("where,label\nx.jpg,1\n", ".csv", r"'path' column, found \['where', 'label'\]"),
        ("path,label\na/one.jpg,cat,extra\n", ".csv", r"bad.csv:2: more fields than the header's 2"),
        (
            "a/one.jpg 3\nb/three.jpg\na/one.jpg 4\n",
            ".txt",
            r"bad.txt:3: a/one.jpg is listed again \(first on line 1\)",
        ),
        ("a/my photo.jpg\n", ".txt", r"first: .*a/my photo.jpg\)"),
    ],
)
def test_bad_lists_are_named(listed, text, suffix, message):
    data, lists = listed
    f = lists / f"bad{suffix}"
    f.write_text(text)
    with pytest.raises(InputError, match=message):
        open_image_set(f, image_root=data)


def test_missing_list_file(tmp_path):
    from negvocab.data import image_list

    with pytest.raises(InputError, match="no such image list"):
        image_list(tmp_path / "none.txt")


def test_fi_imagenet_warns_when_the_split_is_not_the_papers(val_classes, tmp_path, monkeypatch, caplog):
    """On a full validation folder (here: 12 images stand for 50,000) a split of other sizes is named."""
    import importlib

    fi_mod = importlib.import_module("negvocab.data.fi_imagenet")  # the package exports a function of that name

    monkeypatch.setattr(fi_mod, "N_VAL", 12)
    ood = tmp_path / "ood.txt"
    ood.write_text(f"{vid(2)} sea slug\n{vid(5)} kite\n")
    amb = tmp_path / "amb.txt"
    amb.write_text(f"{vid(7)}\n")
    monkeypatch.setattr(fi_mod, "PAPER_SPLIT", {"ood": 2, "ambiguous": 1, "id": 9})
    with caplog.at_level(logging.WARNING):
        fi_imagenet(val_classes, ood, amb)
    assert "published" not in caplog.text
    monkeypatch.setattr(fi_mod, "PAPER_SPLIT", {"ood": 655, "ambiguous": 980, "id": 48_365})
    with caplog.at_level(logging.WARNING):
        fi_imagenet(val_classes, ood, amb)
    assert "2 OOD, 1 ambiguous and 9 ID images; the published Fi-ImageNet-1k has 655, 980 and 48,365" in caplog.text
