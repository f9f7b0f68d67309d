"""Reading SQuAD files: Google's words and answer positions, clear errors.

The reference is Model Garden's `squad_lib.read_squad_examples` (a port of
Google's) on generated files, plus hand-worked contexts.
"""

import json
import logging

import pytest

from bert_tf.tasks.squad import examples as squad_examples
from bert_tf.tasks.squad.examples import SquadFormatError
from testing import squad_synthetic
import squad_testdata


def _squad(context, qas):
    return {"version": "1.1", "data": [
        {"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def _write(tmp_path, document, name="squad.json"):
    return squad_synthetic.write_json(tmp_path / name, document)


def test_split_context_uses_the_originals_whitespace():
    # " ", tab, CR, LF and U+202F separate; U+00A0 and U+2009 do not.
    text = " a  b\tc\r\nd\u202fe\u00a0f g\u2009h "
    doc_tokens, offsets = squad_examples.split_context(text)
    assert doc_tokens == ["a", "b", "c", "d", "e\u00a0f", "g\u2009h"]
    # Hand-worked: leading space -> -1; each whitespace -> the word before.
    assert offsets == [-1, 0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 4,
                       5, 5, 5, 5]
    assert len(offsets) == len(text)


@pytest.mark.parametrize("version_2", [False, True])
@pytest.mark.parametrize("is_training", [True, False])
def test_examples_match_model_garden(tmp_path, version_2, is_training):
    from official.nlp.data import squad_lib
    path = squad_testdata.generated_squad_file(
        tmp_path, seed=11, num_paragraphs=40, version_2=version_2)
    ours = squad_examples.read_squad_examples(path, is_training, version_2)
    theirs = squad_lib.read_squad_examples(path, is_training, version_2)
    assert len(ours) == len(theirs) > 100
    for a, b in zip(ours, theirs):
        assert (a.qas_id, a.question_text, a.doc_tokens, a.orig_answer_text,
                a.start_position, a.end_position, a.is_impossible) == (
                    b.qas_id, b.question_text, b.doc_tokens,
                    b.orig_answer_text, b.start_position, b.end_position,
                    b.is_impossible)


def test_answer_positions_by_hand(tmp_path):
    context = "The leader was John Smith (1895-1943)."
    qas = [{"id": "q1", "question": "Who?",
            "answers": [{"text": "John Smith", "answer_start": 15}]},
           {"id": "q2", "question": "Born?",
            "answers": [{"text": "1895", "answer_start": 27}]}]
    examples = squad_examples.read_squad_examples(
        _write(tmp_path, _squad(context, qas)), is_training=True)
    assert [(e.start_position, e.end_position) for e in examples] == [
        (3, 4), (5, 5)]
    assert examples[1].orig_answer_text == "1895"
    predict = squad_examples.read_squad_examples(
        _write(tmp_path, _squad(context, qas)), is_training=False)
    assert [e.start_position for e in predict] == [None, None]
    assert [e.orig_answer_text for e in predict] == [None, None]


def test_answer_start_not_matching_text_is_skipped_with_its_id(
        tmp_path, caplog):
    context = "Paris is the capital of France."
    qas = [{"id": "good", "question": "Capital?",
            "answers": [{"text": "Paris", "answer_start": 0}]},
           {"id": "shifted-id-7", "question": "Country?",
            "answers": [{"text": "France", "answer_start": 3}]},
           {"id": "outside-id-8", "question": "Country?",
            "answers": [{"text": "France", "answer_start": 300}]}]
    path = _write(tmp_path, _squad(context, qas))
    with caplog.at_level(logging.WARNING):
        examples = squad_examples.read_squad_examples(path, is_training=True)
    assert [e.qas_id for e in examples] == ["good"]
    assert "shifted-id-7" in caplog.text
    assert "not found at answer_start 3" in caplog.text
    assert "outside-id-8" in caplog.text
    assert "outside its context" in caplog.text
    # Prediction does not look at answers: all questions are kept.
    assert len(squad_examples.read_squad_examples(path, False)) == 3


def test_empty_context_warns_with_question_ids(tmp_path, caplog):
    document = _squad(" \n ", [
        {"id": "empty-1", "question": "What?",
         "answers": [{"text": "x", "answer_start": 0}]}])
    document["data"][0]["paragraphs"].append({
        "context": "Some words.", "qas": [
            {"id": "fine", "question": "What?",
             "answers": [{"text": "Some", "answer_start": 0}]}]})
    path = _write(tmp_path, document)
    with caplog.at_level(logging.WARNING):
        training = squad_examples.read_squad_examples(path, True)
    assert [e.qas_id for e in training] == ["fine"]
    assert "empty context for question empty-1" in caplog.text
    predicting = squad_examples.read_squad_examples(path, False)
    assert [e.qas_id for e in predicting] == ["empty-1", "fine"]
    assert predicting[0].doc_tokens == []


def test_malformed_json_names_the_file_and_position(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"data": [\n  {"paragraphs": [}\n]}', encoding="utf-8")
    with pytest.raises(SquadFormatError,
                       match=r"broken\.json: not valid JSON \(line 2"):
        squad_examples.read_squad_examples(path, True)


def test_missing_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nowhere\.json"):
        squad_examples.read_squad_examples(tmp_path / "nowhere.json", False)


def test_not_utf8_names_the_file(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes('{"data": ["caf\u00e9"]}'.encode("latin-1"))
    with pytest.raises(SquadFormatError, match=r"latin1\.json: not UTF-8"):
        squad_examples.read_squad_examples(path, False)


@pytest.mark.parametrize("document, message", [
    ([1, 2], r"expected a JSON object with a \"data\" list"),
    ({"data": [{"title": "x"}]}, r"data\[0\] has no \"paragraphs\" list"),
    ({"data": [{"paragraphs": [{"qas": []}]}]},
     r"data\[0\]\.paragraphs\[0\] has no \"context\" string"),
    ({"data": [{"paragraphs": [{"context": "c", "qas": [
        {"question": "q?"}]}]}]},
     r"data\[0\]\.paragraphs\[0\]\.qas\[0\] has no question \"id\""),
    ({"data": [{"paragraphs": [{"context": "c", "qas": [
        {"id": "q-9"}]}]}]}, r"question q-9 .* has no \"question\" string"),
])
def test_wrong_structure_is_named(tmp_path, document, message):
    path = _write(tmp_path, document, name="odd.json")
    with pytest.raises(SquadFormatError, match=r"odd\.json: .*" + message):
        squad_examples.read_squad_examples(path, False)


def test_training_needs_exactly_one_answer(tmp_path):
    path = _write(tmp_path, _squad("a b", [
        {"id": "two-answers", "question": "q?", "answers": [
            {"text": "a", "answer_start": 0},
            {"text": "b", "answer_start": 2}]}]))
    with pytest.raises(SquadFormatError,
                       match="question two-answers has 2 answers; for "
                             "training, each question should have exactly 1"):
        squad_examples.read_squad_examples(path, True)
    # Dev files have several answers per question: fine for prediction.
    assert len(squad_examples.read_squad_examples(path, False)) == 1


def test_malformed_answer_names_the_question(tmp_path):
    path = _write(tmp_path, _squad("a b", [
        {"id": "q-str-start", "question": "q?",
         "answers": [{"text": "a", "answer_start": "0"}]}]))
    with pytest.raises(SquadFormatError,
                       match="question q-str-start: an answer must be an "
                             "object with a \"text\" string and an integer"):
        squad_examples.read_squad_examples(path, True)


def test_version_2(tmp_path):
    path = _write(tmp_path, _squad("Paris is big.", [
        {"id": "yes", "question": "q?", "is_impossible": False,
         "answers": [{"text": "big", "answer_start": 9}]},
        {"id": "no", "question": "q?", "is_impossible": True,
         "answers": [], "plausible_answers": [
             {"text": "Paris", "answer_start": 0}]}]))
    examples = squad_examples.read_squad_examples(path, True, True)
    assert [(e.is_impossible, e.start_position, e.end_position,
             e.orig_answer_text) for e in examples] == [
        (False, 2, 2, "big"), (True, -1, -1, "")]
    assert squad_examples.has_gold_answers(path, True)


def test_version_2_training_needs_is_impossible(tmp_path):
    path = _write(tmp_path, _squad("a b", [
        {"id": "v1-question", "question": "q?",
         "answers": [{"text": "a", "answer_start": 0}]}]))
    with pytest.raises(SquadFormatError,
                       match="question v1-question has no boolean "
                             "\"is_impossible\""):
        squad_examples.read_squad_examples(path, True, True)


def test_has_gold_answers(tmp_path):
    with_answers = _write(tmp_path, _squad("a b", [
        {"id": "1", "question": "q?",
         "answers": [{"text": "a", "answer_start": 0}]}]), name="dev.json")
    without = _write(tmp_path, _squad("a b", [
        {"id": "1", "question": "q?"}]), name="test.json")
    assert squad_examples.has_gold_answers(with_answers)
    assert not squad_examples.has_gold_answers(without)


def test_duplicate_ids_warn(tmp_path, caplog):
    path = _write(tmp_path, _squad("a b", [
        {"id": "twice", "question": "q?"},
        {"id": "twice", "question": "r?"}]))
    with caplog.at_level(logging.WARNING):
        squad_examples.read_squad_examples(path, False)
    assert "question id twice appears more than once" in caplog.text


def test_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_squad("a b", [
        {"id": "1", "question": "q?"}])).encode("utf-8"))
    assert len(squad_examples.read_squad_examples(path, False)) == 1
