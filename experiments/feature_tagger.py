r"""The feature-based tagger of the BERT paper's section 5.3, in miniature.

    python -m experiments.feature_tagger --data_dir=DIR \
      --vocab_file=$M/vocab.txt --bert_config_file=$M/bert_config.json \
      --init_checkpoint=$M/bert_model.ckpt --do_lower_case=true \
      --layers=-1,-2,-3,-4 --seed=1 --output_dir=OUT

(run from the repository root). The encoder is frozen: each word's vector is
what `extract_features.py --layers=-1,-2,-3,-4` writes for the word's first
piece -- the concatenation of the last four Transformer layers' outputs --
computed once by the same `FeatureExtractor`, over the same windows
`run_tagging.py` builds (`tagging_features`: `[CLS]`/`[SEP]` framing,
`--max_seq_length` windows `--doc_stride` apart, each word taken from the
window where it has most context). A small randomly initialized BiLSTM
tagger (`--lstm_layers` bidirectional LSTM layers of `--lstm_units` per
direction, then a dense layer to the labels) is trained on these vectors by
Adam with the per-word cross-entropy; the paper's was two 768-wide layers.

Outputs in `--output_dir`: `eval_results.txt` (dev: `eval_precision`,
`eval_recall`, `eval_f1` at entity level as seqeval computes them,
`eval_f1_<TYPE>`, `eval_accuracy`), `test_results.txt` (the same metrics of
the test file under `test_` names) and `label_list.txt`. The word vectors
are cached in `--features_dir` (`<split>.npz`, written atomically), so runs
with other seeds skip the encoder.
"""

from bert_tf import startup

# Before anything imports TensorFlow: keeps its C++ start-up lines out.
startup.quiet_start()

import os

from absl import app
from absl import flags
import numpy as np

from bert_tf import cli
from bert_tf import file_io

FLAGS = flags.FLAGS
SPLITS = (("train", "train.txt"), ("dev", "dev.txt"), ("test", "test.txt"))
EVAL_RESULTS_FILE = "eval_results.txt"
TEST_RESULTS_FILE = "test_results.txt"


def define_flags(flag_values=FLAGS):
    """The tagger's flags (only when run as a program)."""
    flags.DEFINE_string("data_dir", None,
                        "Directory with train.txt, dev.txt, test.txt (CoNLL "
                        "format, the label in the last column).",
                        flag_values=flag_values)
    flags.DEFINE_string("vocab_file", None, "The model's vocab.txt.",
                        flag_values=flag_values)
    flags.DEFINE_string("bert_config_file", None,
                        "The model's bert_config.json.",
                        flag_values=flag_values)
    flags.DEFINE_string("init_checkpoint", None,
                        "The (frozen) encoder's checkpoint.",
                        flag_values=flag_values)
    flags.DEFINE_bool("do_lower_case", True, "Lower-case (uncased models).",
                      flag_values=flag_values)
    flags.DEFINE_string("layers", "-1,-2,-3,-4",
                        "Encoder layers whose outputs are concatenated, as "
                        "extract_features.py's --layers.",
                        flag_values=flag_values)
    flags.DEFINE_integer("max_seq_length", 64,
                         "Window length in word pieces (as run_tagging.py).",
                         flag_values=flag_values)
    flags.DEFINE_integer("doc_stride", 32,
                         "Pieces between window starts (as run_tagging.py).",
                         flag_values=flag_values)
    flags.DEFINE_integer("lstm_units", 128,
                         "Units of each LSTM direction.",
                         flag_values=flag_values)
    flags.DEFINE_integer("lstm_layers", 2, "Stacked BiLSTM layers.",
                         flag_values=flag_values)
    flags.DEFINE_integer("num_train_epochs", 30, "Passes over the training "
                         "sentences.", flag_values=flag_values)
    flags.DEFINE_integer("train_batch_size", 16, "Sentences per step.",
                         flag_values=flag_values)
    flags.DEFINE_float("learning_rate", 1e-3, "Adam's learning rate.",
                       flag_values=flag_values)
    flags.DEFINE_float("dropout", 0.5, "Dropout on the word vectors and "
                       "between the LSTM layers.", flag_values=flag_values)
    flags.DEFINE_integer("seed", 1, "Seed of the tagger's initialization "
                         "and of the batch order.", flag_values=flag_values)
    flags.DEFINE_string("features_dir", None,
                        "Cache of the word vectors (default: "
                        "<output_dir>/features).", flag_values=flag_values)
    flags.DEFINE_string("output_dir", None, "Where the results go.",
                        flag_values=flag_values)


# -- word vectors from the frozen encoder --------------------------------------

def sentence_word_vectors(tagging_set, extractor, tokenizer):
    """Each sentence's word vectors, as extract_features computes them.

    Args:
      tagging_set: a `tasks.tagging.TaggingSet` (its windows' arrays).
      extractor: a `features.extraction.FeatureExtractor` with the chosen
        layers.
      tokenizer: the `FullTokenizer` the windows were made with.

    Returns:
      A list (one per sentence) of float32 arrays [num_words,
      num_layers * hidden_size]: the chosen layers' outputs at each word's
      first piece, concatenated in `--layers` order, each word from the
      window that owns it.
    """
    from bert_tf.features import extraction
    from bert_tf.tasks.tagging import features as features_lib

    arrays = tagging_set.arrays
    windows = []
    for row in range(tagging_set.num_windows):
        length = int(arrays[features_lib.INPUT_MASK][row].sum())
        windows.append(extraction.ExtractionFeatures(
            unique_id=row, tokens=tokenizer.convert_ids_to_tokens(
                arrays[features_lib.INPUT_IDS][row][:length].tolist()),
            input_ids=arrays[features_lib.INPUT_IDS][row],
            input_mask=arrays[features_lib.INPUT_MASK][row],
            segment_ids=arrays[features_lib.SEGMENT_IDS][row]))
    sentences = tagging_set.tagging_file.sentences
    vectors = [None] * len(sentences)
    for window, layers in extractor.run(windows):
        row = window.unique_id
        # [num_layers, tokens, hidden] -> [tokens, num_layers * hidden]
        tokens = np.concatenate(list(np.asarray(layers)), axis=-1)
        index = arrays[features_lib.SENTENCE_INDEX][row]
        if vectors[index] is None:
            vectors[index] = np.zeros(
                [len(sentences[index].words), tokens.shape[-1]], np.float32)
        first_word = arrays[features_lib.FIRST_WORD][row]
        for slot in np.flatnonzero(arrays[features_lib.LABEL_WEIGHTS][row]):
            vectors[index][first_word + slot] = tokens[
                arrays[features_lib.WORD_POSITIONS][row][slot]]
    return vectors


def save_vectors(path, vectors):
    """Writes a list of [words, dim] arrays to an .npz (atomically)."""
    lengths = np.asarray([len(v) for v in vectors], np.int64)
    with file_io.atomic_write(path, "wb") as writer:
        np.savez(writer, lengths=lengths, vectors=np.concatenate(vectors))


def load_vectors(path):
    """The list of arrays `save_vectors` wrote."""
    with np.load(path) as data:
        return np.split(data["vectors"], np.cumsum(data["lengths"])[:-1])


# -- the BiLSTM tagger ---------------------------------------------------------

def build_tagger(input_size, num_labels, lstm_units, lstm_layers, dropout):
    """A randomly initialized BiLSTM tagger on word vectors.

    Returns:
      A Keras model: float32 [batch, words, input_size] (all-zero rows are
      padding, masked) -> logits [batch, words, num_labels].
    """
    import keras

    inputs = keras.Input([None, input_size])
    hidden = keras.layers.Masking(0.0)(inputs)
    hidden = keras.layers.Dropout(dropout)(hidden)
    for _ in range(lstm_layers):
        hidden = keras.layers.Bidirectional(keras.layers.LSTM(
            lstm_units, return_sequences=True))(hidden)
        hidden = keras.layers.Dropout(dropout)(hidden)
    logits = keras.layers.Dense(num_labels)(hidden)
    return keras.Model(inputs, logits)


def padded_batch(vectors, label_ids=None):
    """Sentences padded to the longest: (inputs, labels, weights)."""
    longest = max(len(v) for v in vectors)
    inputs = np.zeros([len(vectors), longest, vectors[0].shape[-1]],
                      np.float32)
    labels = np.zeros([len(vectors), longest], np.int32)
    weights = np.zeros([len(vectors), longest], np.float32)
    for row, sentence in enumerate(vectors):
        inputs[row, :len(sentence)] = sentence
        weights[row, :len(sentence)] = 1.0
        if label_ids is not None:
            labels[row, :len(sentence)] = label_ids[row]
    return inputs, labels, weights


def train_tagger(model, vectors, label_ids, num_epochs, batch_size,
                 learning_rate, seed):
    """Adam on the mean per-word cross-entropy; returns the last epoch's loss.
    """
    import keras
    import tensorflow as tf

    optimizer = keras.optimizers.Adam(learning_rate)
    rng = np.random.default_rng(seed)
    size = vectors[0].shape[-1]

    # Batches differ in length: one trace for all of them.
    @tf.function(input_signature=[
        tf.TensorSpec([None, None, size], tf.float32),
        tf.TensorSpec([None, None], tf.int32),
        tf.TensorSpec([None, None], tf.float32)])
    def step(inputs, labels, weights):
        with tf.GradientTape() as tape:
            logits = model(inputs, training=True)
            losses = tf.keras.losses.sparse_categorical_crossentropy(
                labels, logits, from_logits=True)
            loss = tf.reduce_sum(losses * weights) / tf.reduce_sum(weights)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    epoch_loss = float("nan")
    for _ in range(num_epochs):
        order = rng.permutation(len(vectors))
        losses = []
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            inputs, labels, weights = padded_batch(
                [vectors[i] for i in rows], [label_ids[i] for i in rows])
            losses.append(float(step(tf.constant(inputs), tf.constant(labels),
                                     tf.constant(weights))))
        epoch_loss = float(np.mean(losses))
    return epoch_loss


def predict_tagger(model, vectors, batch_size=64):
    """Each sentence's predicted label ids."""
    predicted = []
    for start in range(0, len(vectors), batch_size):
        batch = vectors[start:start + batch_size]
        inputs, _, _ = padded_batch(batch)
        ids = np.asarray(model(inputs, training=False)).argmax(-1)
        predicted.extend(row[:len(sentence)]
                         for row, sentence in zip(ids, batch))
    return predicted


# -- the program ---------------------------------------------------------------

def run(flag_values):
    """Extracts (or loads) the word vectors, trains, evaluates.

    Returns:
      (dev metrics, test metrics): dicts as in the output files.
    """
    import keras

    from bert_tf.checkpoints import load_checkpoint
    from bert_tf.config import BertConfig
    from bert_tf.features import extraction
    from bert_tf.modeling import BertModel
    from bert_tf.tasks.tagging import examples as tagging_examples
    from bert_tf.tasks.tagging import features as tagging_features
    from bert_tf.tasks.tagging import metrics as tagging_metrics
    from bert_tf.tasks.tagging import task as tagging
    from bert_tf.text import tokenization
    from bert_tf.training import trainer

    for name in ("data_dir", "vocab_file", "bert_config_file",
                 "init_checkpoint", "output_dir"):
        if not getattr(flag_values, name):
            raise ValueError(f"--{name} is required")
    files = {split: tagging_examples.read_tagging_file(
        os.path.join(flag_values.data_dir, name), tagging_examples.CONLL)
        for split, name in SPLITS}
    label_list = tagging_examples.labels_of(files["train"])
    for tagging_file in files.values():
        tagging_examples.check_labels(tagging_file, label_list)
    features_dir = flag_values.features_dir or os.path.join(
        flag_values.output_dir, "features")
    os.makedirs(features_dir, exist_ok=True)
    os.makedirs(flag_values.output_dir, exist_ok=True)

    vectors = {}
    extractor = None
    for split, _ in SPLITS:
        path = os.path.join(features_dir, f"{split}.npz")
        if not os.path.exists(path):
            if extractor is None:
                config = BertConfig.from_json_file(
                    flag_values.bert_config_file)
                encoder = BertModel(config)
                encoder.build()
                load_checkpoint(encoder, flag_values.init_checkpoint)
                extractor = extraction.FeatureExtractor(
                    encoder, extraction.parse_layer_indexes(
                        flag_values.layers), batch_size=32)
                tokenizer = tokenization.FullTokenizer(
                    flag_values.vocab_file, flag_values.do_lower_case)
            tagging_set = tagging.make_tagging_set(
                files[split], label_list,
                tagging_features.TaggingWindowConfig(
                    max_seq_length=flag_values.max_seq_length,
                    doc_stride=flag_values.doc_stride), tokenizer)
            save_vectors(path, sentence_word_vectors(tagging_set, extractor,
                                                     tokenizer))
        vectors[split] = load_vectors(path)
        print(f"{split}: {len(vectors[split])} sentences, word vectors of "
              f"{vectors[split][0].shape[-1]} values ({path})", flush=True)

    keras.utils.set_random_seed(flag_values.seed)
    label_map = {label: i for i, label in enumerate(label_list)}
    model = build_tagger(vectors["train"][0].shape[-1], len(label_list),
                         flag_values.lstm_units, flag_values.lstm_layers,
                         flag_values.dropout)
    train_ids = [[label_map[label] for label in sentence.labels]
                 for sentence in files["train"].sentences]
    loss = train_tagger(model, vectors["train"], train_ids,
                        flag_values.num_train_epochs,
                        flag_values.train_batch_size,
                        flag_values.learning_rate, flag_values.seed)
    print(f"trained {flag_values.num_train_epochs} epochs: last epoch's "
          f"loss {loss:.4f}", flush=True)
    results = []
    for split, prefix, file_name in (("dev", "eval_", EVAL_RESULTS_FILE),
                                     ("test", "test_", TEST_RESULTS_FILE)):
        predicted = [[label_list[i] for i in ids]
                     for ids in predict_tagger(model, vectors[split])]
        gold = [sentence.labels for sentence in files[split].sentences]
        metrics = {key: np.float32(value) for key, value in
                   tagging_metrics.tagging_metrics(gold, predicted,
                                                   prefix).items()}
        metrics["loss"] = np.float32(loss)
        trainer.write_eval_results(
            os.path.join(flag_values.output_dir, file_name), metrics)
        print(f"{split}: entity F1 {metrics[prefix + 'f1']:.4f}", flush=True)
        results.append(metrics)
    tagging_examples.write_label_list(
        os.path.join(flag_values.output_dir,
                     tagging_examples.LABEL_LIST_FILE), label_list)
    return tuple(results)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    try:
        run(FLAGS)
    except (ValueError, FileNotFoundError) as error:
        raise SystemExit(f"feature_tagger: error: {error}") from None


if __name__ == "__main__":
    define_flags()
    cli.run_app(main)
