"""From start/end logits to answers: Google's `write_predictions`.

For each question, over all its features (windows):

1. Candidates: every pair of one of the `n_best_size` highest start logits
   and one of the `n_best_size` highest end logits (over the whole
   sequence, padding included, ties to the lower position), kept when both
   ends lie in the window's document part, the start is in the window that
   owns it ("max context"), the end is not before the start, and the span
   has at most `max_answer_length` pieces. Scored by start + end logit.
2. SQuAD 2.0: the null candidate, [CLS] to [CLS], with the lowest
   `start_logits[0] + end_logits[0]` over the question's windows.
3. The best `n_best_size` distinct answer texts, where each span's text is
   its pieces joined and un-WordPieced, projected back onto the original,
   un-normalized context (`get_final_text`: the tokenizer's normalization is
   undone by a character alignment, so accents, case and spacing are the
   context's own; when the alignment fails, the whole words are the answer).
4. Probabilities: softmax of the n-best scores.
5. The answer: the best text (1.1); for 2.0 the best non-null text unless
   `null score - best non-null score > null_score_diff_threshold`, in which
   case "" (that difference goes to null_odds.json).

The settings are one `SquadPostprocessConfig`, which the raw-text
export's in-graph twin of this module, `graph_answers.SquadAnswerer`, takes
too: both select the same answers from the same logits
(tests/tasks/squad/test_squad_twins.py holds them equal).

Output files are Google's: `predictions.json` (id -> text),
`nbest_predictions.json` (id -> [{text, probability, start_logit,
end_logit}]) and, for 2.0, `null_odds.json` (id -> score difference), as
`json.dumps(..., indent=4)` plus a newline, each written under a temporary
name and renamed.

Where the original would crash, this module does something defined:
a SQuAD 2.0 question with no valid non-null candidate gets "" and its null
score as odds (the original raises an AttributeError), and a feature
without model output is an error naming it and its question (the original
raises a bare KeyError).

Memory: logits are kept as the float32 arrays they come in (not as lists of
Python floats, as the original does), they are looked up by feature id
(not copied), and each question's candidates are built and dropped before
the next question.
"""

import collections
import dataclasses
import json
import math

from absl import logging
import numpy as np

from bert_tf import file_io
from bert_tf.text import tokenization

PREDICTIONS_FILE = "predictions.json"
NBEST_PREDICTIONS_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"

# The model output of one feature; logits over all `max_seq_length`
# positions (float32 arrays or lists of floats).
RawResult = collections.namedtuple(
    "RawResult", ["unique_id", "start_logits", "end_logits"])

# A candidate span of one feature.
_PrelimPrediction = collections.namedtuple(
    "PrelimPrediction",
    ["feature_index", "start_index", "end_index", "start_logit", "end_logit"])

# One entry of the n-best list.
_NbestPrediction = collections.namedtuple(
    "NbestPrediction", ["text", "start_logit", "end_logit"])

# The original's score before any window's null score is seen.
_NO_NULL_SCORE = 1000000


@dataclasses.dataclass(frozen=True)
class SquadPostprocessConfig:
    """How a question becomes windows and its windows' logits an answer.

    run_squad.py's flags of the names, with their defaults. The Python path
    (`tasks/squad/features.py` cuts the windows, `compute_predictions`
    selects the answers) and its in-graph twin (`graph_answers
    .SquadAnswerer`, in raw-text SavedModels) both read them from here;
    a run records them in its description, and an export of the run reads
    them back.

    Attributes:
      doc_stride: context pieces between the starts of two windows.
      max_query_length: question pieces kept.
      n_best_size: start and end positions combined into candidates, and
        the length of each n-best list.
      max_answer_length: longest answer, in word pieces.
      version_2_with_negative: SQuAD 2.0: questions may have no answer.
      null_score_diff_threshold: 2.0: predict no answer when its score
        beats the best answer's by more than this.
    """
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    version_2_with_negative: bool = False
    null_score_diff_threshold: float = 0.0

    @classmethod
    def from_fields(cls, values):
        """The config of an object (a run's config, parsed flags) with
        attributes of the same names."""
        return cls(**{field.name: getattr(values, field.name)
                      for field in dataclasses.fields(cls)})

    def check(self, max_seq_length):
        """Google's `validate_flags_or_throw` length check, and every
        count positive; raises ValueError naming the flag."""
        if max_seq_length <= self.max_query_length + 3:
            raise ValueError(
                f"The max_seq_length ({max_seq_length}) must be greater "
                f"than max_query_length ({self.max_query_length}) + 3")
        for name in ("doc_stride", "max_query_length", "n_best_size",
                     "max_answer_length"):
            if getattr(self, name) <= 0:
                raise ValueError(
                    f"--{name}={getattr(self, name)} must be positive")


def best_indexes(logits, n_best_size):
    """Positions of the `n_best_size` largest logits, largest first.

    Equal logits keep their order (lower position first), as the original's
    stable `sorted(..., reverse=True)`.
    """
    logits = np.asarray(logits)
    order = np.argsort(-logits, kind="stable")
    return order[:n_best_size].tolist()


def compute_softmax(scores):
    """Softmax of a list of floats (the original's, in float64)."""
    if not scores:
        return []
    max_score = max(scores)
    exp_scores = [math.exp(score - max_score) for score in scores]
    total = sum(exp_scores)
    return [value / total for value in exp_scores]


def _strip_spaces(text):
    """`text` without " ", and map: index there -> index in `text`."""
    kept_positions = [i for i, char in enumerate(text) if char != " "]
    return "".join(text[i] for i in kept_positions), kept_positions


_basic_tokenizers = {}


def _basic_tokenizer(do_lower_case):
    """A shared `BasicTokenizer` (its word cache speeds up many answers)."""
    tokenizer = _basic_tokenizers.get(do_lower_case)
    if tokenizer is None:
        tokenizer = _basic_tokenizers[do_lower_case] = (
            tokenization.BasicTokenizer(do_lower_case=do_lower_case))
    return tokenizer


def get_final_text(pred_text, orig_text, do_lower_case,
                   verbose_logging=False):
    """Projects a normalized predicted text back onto the original words.

    `orig_text` is the span's original words ("Steve Smith's"), `pred_text`
    the detokenized pieces ("steve smith"). The original words are
    normalized by the `BasicTokenizer`; if, spaces removed, they have as many
    characters as the original words, characters are aligned one to one and
    the predicted text's first and last characters are mapped back
    ("Steve Smith"). Otherwise (the normalization changed the length, e.g.
    a removed accent mark or control character), or if the predicted text
    cannot be found, `orig_text` is returned whole.

    Args:
      pred_text: the predicted text, pieces joined and "##" removed.
      orig_text: the original words of the span, joined with single spaces.
      do_lower_case: the tokenizer's setting.
      verbose_logging: log why an alignment failed.

    Returns:
      A substring of `orig_text`.
    """
    tok_text = " ".join(_basic_tokenizer(do_lower_case).tokenize(orig_text))
    start_position = tok_text.find(pred_text)
    if start_position == -1:
        if verbose_logging:
            logging.info("Unable to find text: '%s' in '%s'", pred_text,
                         orig_text)
        return orig_text
    end_position = start_position + len(pred_text) - 1

    orig_ns_text, orig_ns_to_s = _strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s = _strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        if verbose_logging:
            logging.info(
                "Length not equal after stripping spaces: '%s' vs '%s'",
                orig_ns_text, tok_ns_text)
        return orig_text

    tok_s_to_ns = {s: ns for ns, s in enumerate(tok_ns_to_s)}
    # Both ends of `pred_text` are non-space characters of `tok_text`
    # unless `pred_text` itself starts or ends with a space, which the
    # caller's whitespace cleaning rules out; the checks mirror the
    # original's anyway.
    ns_start = tok_s_to_ns.get(start_position)
    if ns_start is None or ns_start >= len(orig_ns_to_s):
        if verbose_logging:
            logging.info("Couldn't map start position")
        return orig_text
    ns_end = tok_s_to_ns.get(end_position)
    if ns_end is None or ns_end >= len(orig_ns_to_s):
        if verbose_logging:
            logging.info("Couldn't map end position")
        return orig_text
    return orig_text[orig_ns_to_s[ns_start]:orig_ns_to_s[ns_end] + 1]


def _span_text(example, feature, start_index, end_index, do_lower_case,
               verbose_logging):
    """The answer text of a span of a feature, in the example's own words."""
    pieces = feature.tokens[start_index:end_index + 1]
    orig_start = feature.token_to_orig_map[start_index]
    orig_end = feature.token_to_orig_map[end_index]
    orig_text = " ".join(example.doc_tokens[orig_start:orig_end + 1])
    # Undo WordPiece ("##"), then normalize whitespace, as the original.
    tok_text = " ".join(pieces).replace(" ##", "").replace("##", "")
    tok_text = " ".join(tok_text.strip().split())
    return get_final_text(tok_text, orig_text, do_lower_case, verbose_logging)


def predict_example(example, features, results, config, do_lower_case,
                    verbose_logging=False):
    """The answer of one question from the outputs of its features.

    Args:
      example: the `SquadExample`.
      features: its `SquadFeatures` (windows), in order.
      results: the `RawResult` of each feature, in the same order.
      config, do_lower_case, verbose_logging: as `compute_predictions`.

    Returns:
      `(answer text, n-best list of OrderedDicts, null score difference)`;
      the difference is None unless `config.version_2_with_negative`.
    """
    n_best_size = config.n_best_size
    max_answer_length = config.max_answer_length
    version_2_with_negative = config.version_2_with_negative
    prelim_predictions = []
    score_null = _NO_NULL_SCORE
    min_null_feature_index = 0
    null_start_logit = null_end_logit = 0
    for feature_index, (feature, result) in enumerate(zip(features, results)):
        start_logits = result.start_logits
        end_logits = result.end_logits
        if version_2_with_negative:
            feature_null_score = float(start_logits[0]) + float(end_logits[0])
            if feature_null_score < score_null:
                score_null = feature_null_score
                min_null_feature_index = feature_index
                null_start_logit = float(start_logits[0])
                null_end_logit = float(end_logits[0])
        num_tokens = len(feature.tokens)
        token_to_orig_map = feature.token_to_orig_map
        token_is_max_context = feature.token_is_max_context
        end_indexes = [
            index for index in best_indexes(end_logits, n_best_size)
            if index < num_tokens and index in token_to_orig_map]
        for start_index in best_indexes(start_logits, n_best_size):
            if (start_index >= num_tokens
                    or start_index not in token_to_orig_map
                    or not token_is_max_context.get(start_index, False)):
                continue
            for end_index in end_indexes:
                if (end_index < start_index
                        or end_index - start_index + 1 > max_answer_length):
                    continue
                prelim_predictions.append(_PrelimPrediction(
                    feature_index=feature_index, start_index=start_index,
                    end_index=end_index,
                    start_logit=float(start_logits[start_index]),
                    end_logit=float(end_logits[end_index])))
    if version_2_with_negative:
        prelim_predictions.append(_PrelimPrediction(
            feature_index=min_null_feature_index, start_index=0,
            end_index=0, start_logit=null_start_logit,
            end_logit=null_end_logit))
    # Stable: equal scores keep the order in which they were found.
    prelim_predictions.sort(key=lambda p: p.start_logit + p.end_logit,
                            reverse=True)

    seen_texts = set()
    nbest = []
    for prediction in prelim_predictions:
        if len(nbest) >= n_best_size:
            break
        if prediction.start_index > 0:
            text = _span_text(example, features[prediction.feature_index],
                              prediction.start_index, prediction.end_index,
                              do_lower_case, verbose_logging)
            if text in seen_texts:
                continue
        else:
            text = ""  # The null answer.
        seen_texts.add(text)
        nbest.append(_NbestPrediction(text, prediction.start_logit,
                                      prediction.end_logit))
    if version_2_with_negative and "" not in seen_texts:
        nbest.append(_NbestPrediction("", null_start_logit, null_end_logit))
    if not nbest:
        # No valid span at all (e.g. a context with no tokens): the
        # original's placeholder answer.
        nbest.append(_NbestPrediction("empty", 0.0, 0.0))

    total_scores = [entry.start_logit + entry.end_logit for entry in nbest]
    probabilities = compute_softmax(total_scores)
    nbest_json = []
    for entry, probability in zip(nbest, probabilities):
        output = collections.OrderedDict()
        output["text"] = entry.text
        output["probability"] = probability
        output["start_logit"] = entry.start_logit
        output["end_logit"] = entry.end_logit
        nbest_json.append(output)

    if not version_2_with_negative:
        return nbest_json[0]["text"], nbest_json, None
    best_non_null = next((entry for entry in nbest if entry.text), None)
    if best_non_null is None:
        logging.warning(
            "question %s has no valid non-null answer span; predicting no "
            "answer", example.qas_id)
        return "", nbest_json, score_null
    score_diff = (score_null - best_non_null.start_logit
                  - best_non_null.end_logit)
    if score_diff > config.null_score_diff_threshold:
        return "", nbest_json, score_diff
    return best_non_null.text, nbest_json, score_diff


def compute_predictions(all_examples, all_features, all_results, config,
                        do_lower_case, verbose_logging=False):
    """Answers, n-best lists and null odds of every question.

    Args:
      all_examples: the `SquadExample`s, in order.
      all_features: their `SquadFeatures` (`example_index` links them; the
        model inputs may have been dropped).
      all_results: `RawResult`s (any order), or a mapping unique_id ->
        `RawResult`.
      config: a `SquadPostprocessConfig` (its `n_best_size`,
        `max_answer_length`, `version_2_with_negative` and
        `null_score_diff_threshold`; the windows are the features').
      do_lower_case: the tokenizer's setting (for `get_final_text`).
      verbose_logging: log text-alignment failures.

    Returns:
      `(predictions, nbest, null_odds)`: OrderedDicts keyed by question id,
      in example order; `null_odds` is empty unless
      `config.version_2_with_negative`.

    Raises:
      ValueError: a feature has no result (naming it and its question).
    """
    if isinstance(all_results, collections.abc.Mapping):
        results_by_id = all_results
    else:
        results_by_id = {result.unique_id: result for result in all_results}
    features_by_example = collections.defaultdict(list)
    for feature in all_features:
        features_by_example[feature.example_index].append(feature)

    predictions = collections.OrderedDict()
    nbest_by_id = collections.OrderedDict()
    null_odds = collections.OrderedDict()
    for example_index, example in enumerate(all_examples):
        features = features_by_example.pop(example_index, [])
        results = []
        for feature in features:
            result = results_by_id.get(feature.unique_id)
            if result is None:
                raise ValueError(
                    f"no model output for feature {feature.unique_id} of "
                    f"question {example.qas_id}")
            results.append(result)
        text, nbest, score_diff = predict_example(
            example, features, results, config, do_lower_case,
            verbose_logging)
        predictions[example.qas_id] = text
        nbest_by_id[example.qas_id] = nbest
        if config.version_2_with_negative:
            null_odds[example.qas_id] = score_diff
    return predictions, nbest_by_id, null_odds


def write_json(path, value):
    """Writes `json.dumps(value, indent=4) + "\n"` (Google's format),
    atomically (`file_io.atomic_write`)."""
    text = json.dumps(value, indent=4) + "\n"
    with file_io.atomic_write(path) as writer:
        writer.write(text)


def write_predictions(all_examples, all_features, all_results, n_best_size,
                      max_answer_length, do_lower_case,
                      output_prediction_file, output_nbest_file,
                      output_null_log_odds_file,
                      version_2_with_negative=False,
                      null_score_diff_threshold=0.0, verbose_logging=False):
    """Google's `write_predictions`, with its arguments: computes and writes
    the output files.

    Args:
      all_examples, all_features, all_results: as `compute_predictions`.
      n_best_size, max_answer_length: `SquadPostprocessConfig`'s fields.
      do_lower_case: as `compute_predictions`.
      output_prediction_file: predictions.json.
      output_nbest_file: nbest_predictions.json.
      output_null_log_odds_file: null_odds.json (written only for 2.0).
      version_2_with_negative, null_score_diff_threshold:
        `SquadPostprocessConfig`'s fields.
      verbose_logging: as `compute_predictions`.

    Returns:
      The predictions dict (question id -> answer text).
    """
    logging.info("Writing predictions to: %s", output_prediction_file)
    logging.info("Writing nbest to: %s", output_nbest_file)
    config = SquadPostprocessConfig(
        n_best_size=n_best_size, max_answer_length=max_answer_length,
        version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=null_score_diff_threshold)
    predictions, nbest, null_odds = compute_predictions(
        all_examples, all_features, all_results, config, do_lower_case,
        verbose_logging)
    write_json(output_prediction_file, predictions)
    write_json(output_nbest_file, nbest)
    if version_2_with_negative:
        write_json(output_null_log_odds_file, null_odds)
    return predictions
