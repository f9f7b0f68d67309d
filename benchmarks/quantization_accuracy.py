"""What int8 costs in accuracy: float32 against int8 exports on real tasks.

Each fine-tuned checkpoint (made with the project's own runners, see the
README's "Serving" section for the commands) is exported in memory and its
dev set scored through every runtime, on the same features the runner makes
(the runner's own feature code, padded to `--max_seq_length`):

  TF float32      the export's ids function (what `serving_ids` runs);
  ONNX float32    `--format=onnx` (tf2onnx), ONNX Runtime;
  ONNX int8       `--format=onnx --quantize=int8` (ONNX Runtime's dynamic
                  quantization);
  TFLite float32  `--format=tflite`, TensorFlow's interpreter (XNNPACK);
  TFLite int8     `--format=tflite --quantize=int8` (dynamic range);
  Keras int8      Keras 3's `model.quantize("int8")` of the same model, run
                  by TensorFlow (measured only; not an export option).

Tasks (any subset; each needs its runner's `--output_dir` and data):

  sentiment  run_classifier.py --task_name=sst-2 on the Rotten Tomatoes
             snippets (`python -m bert_tf.data.rotten_tomatoes`): dev
             accuracy;
  conll      run_tagging.py on `conll2003_sample`
             (`python -m bert_tf.data.task_corpora`): dev entity F1
             (seqeval's definition, `bert_tf.data.tagging_metrics`);
  span       run_squad.py on the replaced-span task
             (`experiments/replaced_span_task.py`): dev F1 (the official
             SQuAD v1.1 script's, `bert_tf.data.squad_evaluate`).

    python benchmarks/quantization_accuracy.py --model_dir=MINILM \
        --sentiment=RT_OUTPUT,RT_DATA --conll=CONLL_OUTPUT,CONLL_DATA \
        --span=SPAN_OUTPUT,SPAN_DEV_JSON [--json=results.json]

It prints one row per task: each runtime's score and the points int8 loses
against float32 of the same runtime.
"""

import argparse
import json
import os
import time

import harness  # noqa: F401  (repository on sys.path, quiet TensorFlow)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

BATCH_SIZE = 32
CONTENDERS = ("TF float32", "ONNX float32", "ONNX int8", "TFLite float32",
              "TFLite int8", "Keras int8")


def _batched(run, arrays):
    """`run` over `arrays` in batches; the outputs concatenated."""
    count = len(next(iter(arrays.values())))
    outputs = {}
    for start in range(0, count, BATCH_SIZE):
        batch = {name: np.ascontiguousarray(value[start:start + BATCH_SIZE])
                 for name, value in arrays.items()}
        for name, value in run(batch).items():
            outputs.setdefault(name, []).append(np.asarray(value))
    return {name: np.concatenate(values) for name, values in outputs.items()}


def _runtimes(export, contenders=CONTENDERS):
    """{contender: run(arrays) -> numpy outputs} of one export, for
    `contenders`; the Keras int8 one quantizes the export's model, so it
    comes last."""
    import onnxruntime

    from bert_tf.export import onnx_export, portable
    input_names = tuple(export.ID_INPUTS)

    def onnx_runner(model):
        session = onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"])
        names = [output.name for output in session.get_outputs()]
        return lambda arrays: dict(zip(names, session.run(names, arrays)))

    def tflite_runner(content):
        runner = tf.lite.Interpreter(
            model_content=content).get_signature_runner("serving_ids")
        return lambda arrays: runner(**arrays)

    def tf_runner():
        serve = tf.function(export.serve_ids)
        return lambda arrays: {
            name: value.numpy() for name, value in serve(
                *[tf.constant(arrays[name]) for name in input_names]).items()}

    builders = {
        "TF float32": tf_runner,
        "ONNX float32": lambda: onnx_runner(onnx_export.onnx_model(
            export, input_names, export.ID_RANK)),
        "ONNX int8": lambda: onnx_runner(onnx_export.quantize_int8(
            onnx_export.onnx_model(export, input_names, export.ID_RANK))),
        "TFLite float32": lambda: tflite_runner(
            portable.tflite_model(export)),
        "TFLite int8": lambda: tflite_runner(
            portable.tflite_model(export, portable.INT8)),
    }
    runtimes = {name: build() for name, build in builders.items()
                if name in contenders}

    def keras_int8(arrays):
        if not getattr(export.model, "_bert_tf_quantized", False):
            export.model.quantize("int8")
            export.model._bert_tf_quantized = True
            keras_int8.run = tf_runner()
        return keras_int8.run(arrays)

    if "Keras int8" in contenders:
        runtimes["Keras int8"] = keras_int8
    return runtimes


def _config(model_dir):
    from bert_tf.config import BertConfig
    return BertConfig.from_json_file(os.path.join(model_dir,
                                                  "bert_config.json"))


def _checkpoint(output_dir):
    return tf.train.latest_checkpoint(output_dir)


def sentiment(model_dir, output_dir, data_dir, max_seq_length=64):
    """(export, arrays, score(outputs)) of the SST-2-format dev set."""
    from bert_tf.data import classifier_features, glue_processors
    from bert_tf.export import builders
    from bert_tf.text import tokenization
    vocab = os.path.join(model_dir, "vocab.txt")
    processor = glue_processors.create_processor("sst-2")
    labels = processor.get_labels(data_dir)
    examples = processor.get_dev_examples(data_dir)
    tokenizer = tokenization.FullTokenizer(vocab, True)
    features = [classifier_features.convert_single_example(
        example, labels, max_seq_length, tokenizer) for example in examples]
    arrays = {name: np.array([getattr(f, name) for f in features], np.int32)
              for name in ("input_ids", "input_mask", "segment_ids")}
    gold = np.array([f.label_id for f in features])
    export = builders.classifier_export(
        _config(model_dir), vocab, True, _checkpoint(output_dir),
        max_seq_length, labels)
    return export, arrays, lambda outputs: float(
        np.mean(outputs["probabilities"].argmax(-1) == gold))


def conll(model_dir, output_dir, data_dir, max_seq_length=64, doc_stride=32):
    """(export, arrays, score(outputs)) of conll2003_sample's dev set."""
    from bert_tf.data import tagging_examples, tagging_features
    from bert_tf.data import tagging_metrics
    from bert_tf.export import builders
    from bert_tf.text import tokenization
    vocab = os.path.join(model_dir, "vocab.txt")
    label_list = tagging_examples.read_label_list(
        os.path.join(output_dir, tagging_examples.LABEL_LIST_FILE))
    sentences = tagging_examples.read_tagging_file(
        os.path.join(data_dir, "dev.txt"), "conll").sentences
    tokenizer = tokenization.FullTokenizer(vocab, True)
    arrays = tagging_features.windows_to_arrays(
        tagging_features.convert_sentences(sentences, label_list,
                                           max_seq_length, doc_stride,
                                           tokenizer), max_seq_length)
    export = builders.tagging_export(
        _config(model_dir), vocab, True, _checkpoint(output_dir),
        max_seq_length, doc_stride, label_list)
    inputs = {name: arrays[name] for name in export.ID_INPUTS}

    def score(outputs):
        predicted = tagging_features.assemble_sentence_predictions(
            sentences, arrays, outputs["predicted_ids"], label_list)
        return tagging_metrics.entity_scores(
            [s.labels for s in sentences], predicted)["f1"]

    return export, inputs, score


def span(model_dir, output_dir, dev_file, max_seq_length=48, doc_stride=24,
         max_query_length=16, max_answer_length=16):
    """(export, arrays, score(outputs)) of the replaced-span dev set."""
    from bert_tf.data import squad_evaluate, squad_examples, squad_features
    from bert_tf.data import squad_postprocess
    from bert_tf.export import builders
    from bert_tf.text import tokenization
    vocab = os.path.join(model_dir, "vocab.txt")
    examples = squad_examples.read_squad_examples(dev_file,
                                                  is_training=False)
    tokenizer = tokenization.FullTokenizer(vocab, True)
    features = list(squad_features.generate_features(
        examples, tokenizer, max_seq_length, doc_stride, max_query_length,
        is_training=False))
    arrays = squad_features.features_to_arrays(features, False)
    arrays.pop(squad_features.UNIQUE_IDS)
    export = builders.squad_export(
        _config(model_dir), vocab, True, _checkpoint(output_dir),
        max_seq_length, doc_stride, max_query_length, 20, max_answer_length)
    with open(dev_file, encoding="utf-8") as reader:
        dataset = json.load(reader)["data"]

    def score(outputs):
        results = [squad_postprocess.RawResult(f.unique_id, start, end)
                   for f, start, end in zip(features, outputs["start_logits"],
                                            outputs["end_logits"])]
        predictions, _, _ = squad_postprocess.compute_predictions(
            examples, features, results, 20, max_answer_length, True)
        return squad_evaluate.evaluate_v1(dataset, predictions)["f1"] / 100

    return export, arrays, score


def reference_of(contender):
    """The float32 contender an int8 one is compared with."""
    return ("TF float32" if contender == "Keras int8"
            else contender.replace("int8", "float32"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True,
                        help="vocab.txt and bert_config.json of the model")
    parser.add_argument("--sentiment", help="OUTPUT_DIR,DATA_DIR")
    parser.add_argument("--conll", help="OUTPUT_DIR,DATA_DIR")
    parser.add_argument("--span", help="OUTPUT_DIR,DEV_JSON")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--contenders", default=",".join(CONTENDERS),
                        help="a comma-separated subset of: "
                             + ", ".join(CONTENDERS))
    args = parser.parse_args()
    tasks = {"sentiment": (sentiment, "dev accuracy"),
             "conll": (conll, "dev entity F1"),
             "span": (span, "dev F1")}
    results = {}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name, (build, metric) in tasks.items():
        paths = getattr(args, name)
        if not paths:
            continue
        start = time.time()
        export, arrays, score = build(args.model_dir, *paths.split(","))
        scores = {}
        chosen = args.contenders.split(",")
        for contender, run in _runtimes(export, chosen).items():
            scores[contender] = score(_batched(run, arrays))
        results[name] = scores
        print(f"{name} ({metric}, {len(next(iter(arrays.values())))} rows, "
              f"{time.time() - start:.0f} s):")
        for contender in scores:
            line = f"  {contender:<15} {scores[contender] * 100:6.2f}"
            if "int8" in contender and reference_of(contender) in scores:
                reference = reference_of(contender)
                line += (f"   int8 - float32: "
                         f"{(scores[contender] - scores[reference]) * 100:+.2f}"
                         " points")
            print(line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as writer:
            json.dump(results, writer, indent=2)


if __name__ == "__main__":
    main()
