"""SQuAD speed: bert_tf against Model Garden, feature creation and fine-tuning.

Feature creation (`--part=features`): reading a SQuAD file and turning its
questions into training features (`max_seq_length` 384, `doc_stride` 128,
`max_query_length` 64, uncased vocabulary), on the same generated file
(Hamlet verse in SQuAD layout, `testing.squad_synthetic`):

* bert_tf: `squad_examples.read_squad_examples` + `squad_features
  .generate_features` with bert_tf's `FullTokenizer`;
* Model Garden: `official.nlp.data.squad_lib.read_squad_examples` +
  `convert_examples_to_features` with its `FullTokenizer` (a port of
  Google's run_squad.py code, so its time is the original's).

Both start from a fresh tokenizer and count CPU time (single-threaded
Python); the script checks that both made the same features.

Fine-tuning (`--part=finetune`): training steps of a span labeler of the
BERT-Base shape (12 layers, hidden 768, 12 heads, intermediate 3072,
vocabulary 30522) at sequence length 384, global batch 32, on the same
records (random full-length features in Google's SQuAD record format),
with Google's optimizer settings (AdamW, weight decay 0.01, gradients
clipped to global norm 1.0):

* bert_tf: `SquadTask` under the generic `Trainer`, what `run_squad.py
  --do_train` runs, timing `Trainer.train_steps` (`--steps` steps in one
  `tf.function` call);
* Model Garden: `official.nlp.modeling.models.BertSpanLabeler` on a
  `BertEncoderV2` (tf_keras), with `legacy_adamw.AdamWeightDecay`, the same
  loss (mean of the start and end cross-entropies) and the same loop shape.

Each side runs one untimed call first (tracing, compilation); then the two
sides' timed calls alternate for `--rounds` rounds and the best of each is
kept. The script prints examples/s and the ratios; it asserts nothing about
time.

    python benchmarks/squad.py         # both parts (BERT-Base: use a GPU)
    python benchmarks/squad.py --part=features
    python benchmarks/squad.py --part=finetune --num_layers=2 --steps=2 \
        --batch_size=4                                # a quick CPU run
"""

import argparse
import os
import random
import tempfile

import harness  # first: puts the repository on the path, quiets TF logging

import numpy as np
import tensorflow as tf

from testing import squad_synthetic  # noqa: E402

VOCAB_FILE = (harness.REPO_ROOT / "tests" / "golden" / "models"
              / "uncased_vocab.txt")
LEARNING_RATE = 3e-5


# -- feature creation ---------------------------------------------------------

def bert_tf_features(path, args):
    """bert_tf's examples and features; returns (examples, feature ids)."""
    from bert_tf.tasks.squad import (
        examples as squad_examples,
        features as squad_features,
    )
    from bert_tf.text import tokenization
    tokenizer = tokenization.FullTokenizer(str(VOCAB_FILE), True)
    examples = squad_examples.read_squad_examples(path, is_training=True)
    ids = [feature.input_ids for feature in squad_features.generate_features(
        examples, tokenizer, args.seq_length, args.doc_stride,
        args.max_query_length, is_training=True)]
    return len(examples), ids


def model_garden_features(path, args):
    """Model Garden's (Google's) examples and features, same return."""
    from official.nlp.data import squad_lib
    from official.nlp.tools import tokenization as mg_tokenization
    tokenizer = mg_tokenization.FullTokenizer(str(VOCAB_FILE), True)
    examples = squad_lib.read_squad_examples(path, True, False)
    ids = []
    squad_lib.convert_examples_to_features(
        examples, tokenizer, args.seq_length, args.doc_stride,
        args.max_query_length, True,
        lambda feature: ids.append(feature.input_ids))
    return len(examples), ids


def feature_creation(args, work):
    from absl import logging
    # Model Garden logs its first 20 features at INFO: not part of the work.
    logging.set_verbosity(logging.WARNING)
    document = squad_synthetic.make_squad(
        random.Random(0), squad_synthetic.read_words(harness.GOLDEN_CORPUS),
        num_paragraphs=args.num_paragraphs, questions_per_paragraph=5,
        min_words=80, max_words=250)
    path = squad_synthetic.write_json(os.path.join(work, "train.json"),
                                      document)
    (ours, theirs), (our_result, their_result) = (
        harness.best_cpu_seconds_interleaved(
            [lambda: bert_tf_features(path, args),
             lambda: model_garden_features(path, args)], args.rounds))
    num_examples, our_ids = our_result
    if our_result != their_result:
        raise RuntimeError("bert_tf and Model Garden made different features")
    print(f"feature creation: {num_examples} questions -> {len(our_ids)} "
          f"features (max_seq_length {args.seq_length}, doc_stride "
          f"{args.doc_stride}), CPU seconds, best of {args.rounds}")
    print(f"  bert_tf       {num_examples / ours:10.1f} examples/s "
          f"({len(our_ids) / ours:.1f} features/s)")
    print(f"  model garden  {num_examples / theirs:10.1f} examples/s "
          f"({len(our_ids) / theirs:.1f} features/s)")
    print(f"  ratio (bert_tf / model garden): {harness.ratio(theirs, ours)}",
          flush=True)


# -- fine-tuning --------------------------------------------------------------

def write_records(path, num_records, seq_length, vocab_size, seed=0):
    """Random full-length training features in Google's SQuAD records."""
    from bert_tf.tasks.squad import features as squad_features
    rng = np.random.default_rng(seed)
    query = seq_length // 8
    with squad_features.FeatureWriter(path, is_training=True) as writer:
        for index in range(num_records):
            start = int(rng.integers(query + 2, seq_length - 1))
            writer.process_feature(squad_features.SquadFeatures(
                unique_id=1000000000 + index, example_index=index,
                doc_span_index=0, tokens=[], token_to_orig_map={},
                token_is_max_context={},
                input_ids=rng.integers(1, vocab_size, seq_length).tolist(),
                input_mask=[1] * seq_length,
                segment_ids=[0] * (query + 2) + [1] * (seq_length - query - 2),
                start_position=start,
                end_position=min(start + int(rng.integers(0, 5)),
                                 seq_length - 2),
                is_impossible=False))


def training_dataset(record_file, args):
    from bert_tf.tasks.classification import features as classifier_features
    from bert_tf.tasks.squad import features as squad_features
    return classifier_features.batch_dataset(
        squad_features.read_tfrecord(record_file, args.seq_length, True),
        args.batch_size, is_training=True, seed=0)


def bert_tf_training(config, record_file, args, work):
    """A function running `--steps` steps of run_squad's task and trainer."""
    from bert_tf.tasks.squad import task as squad
    from bert_tf.training import optimization
    from bert_tf.training.trainer import Trainer, TrainerConfig
    task = squad.SquadTask(config, squad.SquadDataConfig(
        train_file=record_file, max_seq_length=args.seq_length, seed=0))
    trainer = Trainer(
        task,
        TrainerConfig(output_dir=os.path.join(work, "bert_tf"),
                      train_batch_size=args.batch_size,
                      num_train_steps=10 ** 9, dtype=args.dtype,
                      enable_xla=args.enable_xla),
        optimizer_factory=lambda: optimization.create_optimizer(
            "adamw", LEARNING_RATE, 10 ** 6, 0))
    iterator = trainer.make_train_iterator()

    def train():
        _, steps_run, loss = trainer.train_steps(iterator, args.steps)
        assert steps_run == args.steps and np.isfinite(loss), loss

    return train


def model_garden_training(config, record_file, args):
    """The same steps with Model Garden's BertSpanLabeler (tf_keras)."""
    from official.nlp.modeling import models

    with harness.model_garden_precision(args.dtype):
        # The layers take the policy when they are made.
        model = models.BertSpanLabeler(
            network=harness.model_garden_bert_encoder_v2(config))

    def cross_entropy(logits, positions):
        log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
        one_hot = tf.one_hot(positions, tf.shape(logits)[-1])
        return -tf.reduce_mean(tf.reduce_sum(one_hot * log_probs, axis=-1))

    def span_loss(outputs, batch):
        start_logits, end_logits = outputs
        return (cross_entropy(start_logits, batch["start_positions"])
                + cross_entropy(end_logits, batch["end_positions"])) / 2

    train_steps = harness.model_garden_train_steps(
        model, harness.model_garden_adam_weight_decay(LEARNING_RATE),
        iter(training_dataset(record_file, args)), span_loss, args.dtype,
        args.enable_xla)

    def train():
        loss = train_steps(tf.constant(args.steps))
        assert np.isfinite(loss.numpy())

    return train


def fine_tuning(args, work):
    config = harness.bert_config(args)
    devices = harness.logical_device_types()
    print(f"fine-tuning: BERT {args.num_layers} layers, hidden "
          f"{args.hidden_size}, seq {args.seq_length}, batch "
          f"{args.batch_size}, {args.dtype}, XLA "
          f"{'on' if args.enable_xla else 'off'}, devices {devices}; "
          f"{args.steps} steps per call, best of {args.rounds}", flush=True)
    record_file = os.path.join(work, "train.tf_record")
    write_records(record_file, 4 * args.batch_size, args.seq_length,
                  config.vocab_size)
    ours_train = bert_tf_training(config, record_file, args, work)
    theirs_train = model_garden_training(config, record_file, args)
    ours, theirs = harness.best_seconds_interleaved(
        [ours_train, theirs_train], args.rounds)
    examples = args.steps * args.batch_size
    print(f"  bert_tf       {examples / ours:10.1f} examples/s")
    print(f"  model garden  {examples / theirs:10.1f} examples/s")
    print(f"  ratio (bert_tf / model garden): {harness.ratio(theirs, ours)}",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="all",
                        choices=("all", "features", "finetune"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--num_paragraphs", type=int, default=200,
                        help="generated paragraphs (5 questions each, as "
                        "SQuAD)")
    parser.add_argument("--seq_length", type=int, default=384)
    parser.add_argument("--doc_stride", type=int, default=128)
    parser.add_argument("--max_query_length", type=int, default=64)
    harness.add_model_shape_arguments(parser)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10,
                        help="training steps per timed call")
    harness.add_precision_arguments(parser)
    args = parser.parse_args()
    if min(args.rounds, args.steps, args.num_paragraphs) <= 0:
        parser.error("--rounds, --steps and --num_paragraphs must be positive")
    with tempfile.TemporaryDirectory(prefix="squad_benchmark_") as work:
        if args.part in ("all", "features"):
            feature_creation(args, work)
        if args.part in ("all", "finetune"):
            fine_tuning(args, work)


if __name__ == "__main__":
    main()
