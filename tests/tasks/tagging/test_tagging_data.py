"""Tagging readers (CoNLL, People's Daily) and windowed features."""

import pytest

from bert_tf.tasks.tagging import examples as examples_lib
from bert_tf.tasks.tagging import features as features_lib
from bert_tf.text import tokenization

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER
"""

PEOPLES_DAILY = (
    "19980101-01-001-001/m  迈向/v  [中央/n  人民/n  广播/vn  电台/n]nt  "
    "记者/n\n"
    "\n"
    "中共中央/nt  总书记/n  江/nr  泽民/nr  在/p  北京/ns  [/w\n")


@pytest.fixture
def tokenizer(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "eu", "rejects", "german",
             "peter", "black", "##burn", "##s", "a", "##b", "##c"] + list(
                 "中央人民广播电台")
    path = tmp_path / "vocab.txt"
    path.write_text("".join(f"{token}\n" for token in vocab),
                    encoding="utf-8")
    return tokenization.FullTokenizer(str(path), do_lower_case=True)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_conll_reader_sentences_columns_and_lines(tmp_path):
    data = examples_lib.read_conll(_write(tmp_path, "train.txt", CONLL))
    assert [s.words for s in data.sentences] == [
        ["EU", "rejects", "German"], ["Peter", "Blackburn"]]
    assert [s.labels for s in data.sentences] == [
        ["B-ORG", "O", "B-MISC"], ["B-PER", "I-PER"]]
    assert data.sentences[1].line_numbers == [7, 8]
    assert examples_lib.labels_of(data) == [
        "B-MISC", "B-ORG", "B-PER", "I-PER", "O"]
    pos = examples_lib.read_conll(_write(tmp_path, "t.txt", CONLL),
                                  label_column=1)
    assert pos.sentences[0].labels == ["NNP", "VBZ", "JJ"]


def test_conll_tabs_and_unlabelled_files(tmp_path):
    data = examples_lib.read_conll(_write(
        tmp_path, "t.txt", "New York\tB-LOC\nis\tO\n"))
    assert data.sentences[0].words == ["New York", "is"]  # Tabs keep spaces.
    unlabelled = examples_lib.read_conll(_write(tmp_path, "u.txt",
                                                "a\nb\n\nc\n"))
    assert not unlabelled.has_labels
    assert unlabelled.sentences[0].labels is None


def test_conll_errors_name_file_and_line(tmp_path):
    mixed = _write(tmp_path, "mixed.txt", "a O\nb\n")
    with pytest.raises(examples_lib.TaggingDataError,
                       match=r"mixed.txt:2: a word without a label column"):
        examples_lib.read_conll(mixed)
    path = _write(tmp_path, "few.txt", "a O\n")
    with pytest.raises(examples_lib.TaggingDataError,
                       match=r"few.txt:1: no label column 3"):
        examples_lib.read_conll(path, label_column=3)
    train = examples_lib.read_conll(_write(tmp_path, "train.txt", CONLL))
    dev = examples_lib.read_conll(_write(tmp_path, "dev.txt",
                                         "x B-ORG\n\ny B-LOC\n"))
    with pytest.raises(examples_lib.TaggingDataError,
                       match=r"dev.txt:3: label 'B-LOC' does not occur"):
        examples_lib.check_labels(dev, examples_lib.labels_of(train))


def test_peoples_daily_pos_and_entities(tmp_path):
    path = _write(tmp_path, "pd.txt", PEOPLES_DAILY)
    pos = examples_lib.read_peoples_daily(path)
    assert pos.sentences[0].words == ["迈向", "中央", "人民", "广播", "电台",
                                      "记者"]
    assert pos.sentences[0].labels == ["v", "n", "n", "vn", "n", "n"]
    assert pos.sentences[0].document == "19980101-01-001"
    assert pos.sentences[1].words[-1] == "["  # "[/w" is a word.
    ner = examples_lib.read_peoples_daily(path, entities=True)
    assert ner.sentences[0].labels == ["O", "B-ORG", "I-ORG", "I-ORG",
                                       "I-ORG", "O"]
    # nt alone is an ORG; surname + given name (nr nr) one PER.
    assert ner.sentences[1].labels == ["B-ORG", "O", "B-PER", "I-PER", "O",
                                       "B-LOC", "O"]


@pytest.mark.parametrize("line, message", [
    ("a/n  b", r"pd.txt:1: token 'b' is not word/TAG"),
    ("[a/n  b/n", r"pd.txt:1: compound opened by '\[' is never closed"),
    ("a/n]nt", r"pd.txt:1: '\]' closes no compound"),
])
def test_peoples_daily_errors_name_the_line(tmp_path, line, message):
    with pytest.raises(examples_lib.TaggingDataError, match=message):
        examples_lib.read_peoples_daily(_write(tmp_path, "pd.txt", line))


def test_predictions_written_back_line_for_line(tmp_path):
    data = examples_lib.read_conll(_write(tmp_path, "test.txt", CONLL))
    lines = examples_lib.predicted_file_lines(
        data, [["O", "O", "O"], ["B-PER", "O"]])
    assert lines == CONLL.splitlines()[:2] + [
        "EU NNP B-NP B-ORG O", "rejects VBZ B-VP O O",
        "German JJ B-NP B-MISC O", "", "Peter NNP B-NP B-PER B-PER",
        "Blackburn NNP I-NP I-PER O"]
    pd = examples_lib.read_peoples_daily(_write(tmp_path, "pd.txt",
                                                PEOPLES_DAILY))
    lines = examples_lib.predicted_file_lines(
        pd, [["x"] * 6, ["y"] * 7])
    assert lines[0] == ("19980101-01-001-001/m  迈向/x  中央/x  人民/x  "
                        "广播/x  电台/x  记者/x")
    assert lines[1] == ""
    again = examples_lib.read_peoples_daily(_write(tmp_path, "again.txt",
                                                   "\n".join(lines)))
    assert again.sentences[1].labels == ["y"] * 7


# Characters that str.splitlines() takes for line breaks; none is one for a
# text editor or `wc -l`.
NOT_LINE_BREAKS = ["\x0c", "\x0b", "\x1c", "\x85", "\u2028", "\u2029", "\r"]


@pytest.mark.parametrize("character", NOT_LINE_BREAKS)
def test_conll_lines_are_newline_ended(tmp_path, character):
    text = ("-DOCSTART- O\n\nEU\tB-ORG\n"
            f"Ger{character}man\tB-MISC\n"
            "rejects\tO\n\nPeter\tbad label\n")
    path = _write(tmp_path, "test.txt", text)
    # Line 7 (as `wc -l` and an editor count) holds the bad label.
    with pytest.raises(examples_lib.TaggingDataError,
                       match=r"test.txt:7: label 'bad label' contains white"):
        examples_lib.read_conll(path)
    text = text.replace("bad label", "B-PER")
    data = examples_lib.read_conll(_write(tmp_path, "test.txt", text))
    assert len(data.lines) == text.count("\n") == 7
    assert data.sentences[0].words[1] == f"Ger{character}man"
    assert data.sentences[0].line_numbers == [3, 4, 5]
    assert data.sentences[1].line_numbers == [7]
    lines = examples_lib.predicted_file_lines(data, [["O"] * 3, ["O"]])
    assert len(lines) == 7
    assert lines[3] == f"Ger{character}man\tB-MISC\tO"


@pytest.mark.parametrize("line, message", [
    ("\tNNP\tB-NP\tO", r"bad.txt:2: empty word \(the first column\)"),
    ("EU\tNNP B-NP", r"bad.txt:2: label 'NNP B-NP' contains white space"),
    ("EU\tNNP\tB-NP\tB ORG", r"bad.txt:2: label 'B ORG' contains white"),
])
def test_conll_empty_word_and_spaced_label_are_errors(tmp_path, line,
                                                      message):
    path = _write(tmp_path, "bad.txt", f"a\tb\tc\tO\n{line}\n")
    with pytest.raises(examples_lib.TaggingDataError, match=message):
        examples_lib.read_conll(path)


@pytest.mark.parametrize("character", NOT_LINE_BREAKS)
def test_peoples_daily_lines_are_newline_ended(tmp_path, character):
    # White space inside a line separates tokens; only "\n" ends the line.
    text = f"甲/n{character}丙/v\n丁/n\n戊\n"
    with pytest.raises(examples_lib.TaggingDataError,
                       match=r"pd.txt:3: token '戊' is not word/TAG"):
        examples_lib.read_peoples_daily(_write(tmp_path, "pd.txt", text))
    data = examples_lib.read_peoples_daily(_write(tmp_path, "pd.txt",
                                                  text[:-2]))
    assert len(data.lines) == 2
    assert [sentence.words for sentence in data.sentences] == [["甲", "丙"],
                                                               ["丁"]]
    assert [sentence.line_numbers[0] for sentence in data.sentences] == [1, 2]


def test_features_first_piece_labels(tokenizer):
    sentence = examples_lib.TaggedSentence(
        ["Peter", "Blackburns", "\x00"], ["B-PER", "I-PER", "O"], [1, 2, 3])
    labels = ["B-PER", "I-PER", "O"]
    (window,) = features_lib.convert_sentence(
        sentence, 0, {label: i for i, label in enumerate(labels)},
        features_lib.TaggingWindowConfig(max_seq_length=10, doc_stride=3),
        tokenizer)
    # [CLS] peter black ##burn ##s [UNK] [SEP]
    assert window.input_ids[:7] == [2, 7, 8, 9, 10, 1, 3]
    assert window.word_positions[:3] == [1, 2, 5]
    assert window.label_ids[:3] == [0, 1, 2]
    assert window.label_weights == [1, 1, 1] + [0] * 7
    assert window.input_mask == [1] * 7 + [0] * 3


def test_long_sentences_split_into_windows_no_word_dropped(tokenizer):
    words = ["a", "abc", "b", "c", "ab", "a", "a", "cab", "b", "c", "a"]
    sentence = examples_lib.TaggedSentence(words, ["O"] * len(words),
                                           list(range(len(words))))
    for max_seq_length in (4, 5, 7, 9):
        for stride in (1, 2, 3):
            windows = features_lib.convert_sentences(
                [sentence], ["O"],
                features_lib.TaggingWindowConfig(max_seq_length, stride),
                tokenizer)
            arrays = features_lib.windows_to_arrays(windows, max_seq_length)
            owned = []
            for window in windows:
                assert sum(window.input_mask) <= max_seq_length
                for slot, weight in enumerate(window.label_weights):
                    if weight:
                        owned.append(window.first_word + slot)
            assert sorted(owned) == list(range(len(words)))
            predicted = features_lib.assemble_sentence_predictions(
                [sentence], arrays,
                [[0] * max_seq_length] * len(windows), ["O"])
            assert predicted == [["O"] * len(words)]
    # The word owned by a window is where it has the most context: with
    # windows of 2 pieces and stride 1 the middle of each is not unique, the
    # first window wins ties (SQuAD's rule).
    windows = features_lib.convert_sentences(
        [examples_lib.TaggedSentence(["a", "b", "c"], ["O"] * 3, [1, 2, 3])],
        ["O"], features_lib.TaggingWindowConfig(4, 1), tokenizer)
    assert [(w.first_word, w.label_weights[:2]) for w in windows] == [
        (0, [1, 1]), (1, [0, 1])]
