"""What int8 and bfloat16 cost in accuracy: float32 against int8 and
bfloat16 exports on real tasks.

Each fine-tuned checkpoint (made with the project's own runners, see the
README's "Serving" section for the commands) is exported in memory and its
evaluation set scored through every runtime, on the same features the runner
makes (the runner's own feature code, padded to `--max_seq_length`):

  TF float32      the export's ids function (what `serving_ids` runs);
  ONNX float32    `--format=onnx` (tf2onnx), ONNX Runtime;
  ONNX int8       `--format=onnx --quantize=int8` (ONNX Runtime's dynamic
                  quantization);
  TFLite float32  `--format=tflite`, TensorFlow's interpreter (XNNPACK);
  TFLite int8     `--format=tflite --quantize=int8` (dynamic range);
  Keras int8      Keras 3's `model.quantize("int8")` of the same model, run
                  by TensorFlow (measured only; not an export option);
  TF bfloat16     the checkpoint exported with `--serving_dtype=bfloat16`
                  (weights stored and matmuls computed in bfloat16), its
                  ids function.

Tasks (any subset; each needs its runner's `--output_dir` and data):

  --sentiment=OUTPUT_DIR,DATA_DIR
      run_classifier.py --task_name=sst-2 on the Rotten Tomatoes snippets
      (`python -m bert_tf.corpora.rotten_tomatoes`): dev accuracy;
  --tagging=NAME,OUTPUT_DIR,DATA_DIR[,format=F][,metric=M][,files=A+B]
      (repeatable) a run_tagging.py run, e.g. on a corpus of
      `python -m bert_tf.corpora.task_corpora`: `metric=entity_f1` (the
      default; seqeval's definition, `bert_tf.tasks.tagging.metrics`) or
      `metric=accuracy` (token accuracy, e.g. POS), on `files` of DATA_DIR
      (default `dev.txt`; `dev.txt+test.txt` scores both as one set) read
      as `format` (run_tagging.py's `--input_format`, default `conll`).
      `max_seq_length`, `doc_stride`, the labels and the CRF come from the
      run's own `bert_tf_run.json`;
  --span=OUTPUT_DIR,DEV_JSON
      run_squad.py on the replaced-span task
      (`experiments/replaced_span_task.py`): dev F1 (the official SQuAD
      v1.1 script's, `bert_tf.tasks.squad.evaluate`).

    python benchmarks/quantization_accuracy.py --model_dir=MINILM \
        --sentiment=RT_OUTPUT,RT_DATA \
        --tagging=conll,CONLL_OUTPUT,CONLL_DATA \
        --tagging=wsj_pos,WSJ_OUTPUT,WSJ_DATA,format=word_tag,metric=accuracy \
        --tagging=wnut16,WNUT_OUTPUT,WNUT_DATA,files=dev.txt+test.txt \
        --span=SPAN_OUTPUT,SPAN_DEV_JSON [--json=results.json]

It prints, per task, the size of its evaluation set in the units that
matter (snippets, words and gold entities, questions), each runtime's score,
the points int8 (bfloat16) loses against float32 of the same runtime, and
the paired count: how many units it decides differently from that float32
(labels of
snippets and words, answers of questions; entities predicted by only one of
the two, so a moved boundary counts twice). For tagging it also says how
borderline the changed words were: their float32 margin (top logit minus
the runner-up) against all words' margins. The scores and counts go into
the run's record under `benchmarks/results/` (`benchmarks/records.py`;
accuracy does not depend on the machine's load, so no load limit).
"""

import argparse
import collections
import json
import os
import time

import harness  # first: repository on sys.path, quiet TensorFlow

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

BATCH_SIZE = 32
CONTENDERS = ("TF float32", "ONNX float32", "ONNX int8", "TFLite float32",
              "TFLite int8", "Keras int8", "TF bfloat16")
ENTITY_F1 = "entity_f1"
ACCURACY = "accuracy"
TAGGING_METRICS = (ENTITY_F1, ACCURACY)


class Task(collections.namedtuple(
        "Task", "export arrays metric sizes score decisions margins "
        "export_as")):
    """One task's evaluation, made by the task functions below.

    Attributes:
      export: the `bert_tf.export.serving` export of the checkpoint.
      arrays: the ids signature's inputs, numpy, one row per feature.
      metric: what `score` computes, in words.
      sizes: {unit: count} of the evaluation set, e.g. {"words": 2531}.
      score(outputs): the metric (0-1) of the concatenated outputs.
      decisions(outputs): {unit: what was decided for it}, a list (one
        decision per unit, in order) or a set (entities), for the paired
        counts.
      margins(outputs): None, or one float32 margin per word (top logit
        minus the runner-up), in the order of `decisions`' "words".
      export_as(serving_dtype): the same checkpoint's export built with
        that `--serving_dtype` (`export` is `export_as("float32")`).
    """

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


def _runtimes(task, contenders=CONTENDERS):
    """{contender: run(arrays) -> numpy outputs} of one task's export, for
    `contenders`; the Keras int8 one quantizes the export's model, so it
    comes last."""
    export = task.export
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

    def tf_runner(export=export):
        serve = tf.function(export.serve_ids)
        return lambda arrays: {
            name: value.numpy() for name, value in serve(
                *[tf.constant(arrays[name]) for name in input_names]).items()}

    onnx_float32 = []  # converted once, for both ONNX contenders

    def onnx_model():
        if not onnx_float32:
            onnx_float32.append(onnx_export.onnx_model(
                export, input_names, export.ID_RANK))
        return onnx_float32[0]

    builders = {
        "TF float32": tf_runner,
        "ONNX float32": lambda: onnx_runner(onnx_model()),
        "ONNX int8": lambda: onnx_runner(onnx_export.quantize_int8(
            onnx_model())),
        "TFLite float32": lambda: tflite_runner(
            portable.tflite_model(export)),
        "TFLite int8": lambda: tflite_runner(
            portable.tflite_model(export, portable.INT8)),
        "TF bfloat16": lambda: tf_runner(task.export_as("bfloat16")),
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
    """The `Task` of the SST-2-format dev set."""
    from bert_tf.tasks.classification import (
        features as classifier_features,
        glue_processors,
    )
    from bert_tf.tasks.classification import export as classification_export
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
    def export_as(serving_dtype):
        return classification_export.classifier_export(
            _config(model_dir), vocab, True, _checkpoint(output_dir),
            max_seq_length, labels, serving_dtype=serving_dtype)

    def predicted(outputs):
        return outputs["probabilities"].argmax(-1)

    return Task(export_as("float32"), arrays, "dev accuracy",
                {"snippets": len(gold)},
                lambda outputs: float(np.mean(predicted(outputs) == gold)),
                lambda outputs: {"snippets": predicted(outputs).tolist()},
                lambda outputs: None, export_as)


def _tagging_options(spec):
    """(name, output_dir, data_dir, {option: value}) of a `--tagging` value.

    Raises:
      ValueError: a malformed value (the message quotes it).
    """
    parts = spec.split(",")
    if len(parts) < 3 or not all(parts[:3]):
        raise ValueError(f"--tagging={spec}: expected NAME,OUTPUT_DIR,"
                         "DATA_DIR[,format=F][,metric=M][,files=A+B]")
    options = {"format": "conll", "metric": ENTITY_F1, "files": "dev.txt"}
    for part in parts[3:]:
        key, equals, value = part.partition("=")
        if not equals or key not in options or not value:
            raise ValueError(f"--tagging={spec}: {part!r} is not one of "
                             "format=F, metric=M, files=A+B")
        options[key] = value
    if options["metric"] not in TAGGING_METRICS:
        raise ValueError(f"--tagging={spec}: metric={options['metric']} is "
                         f"not one of {', '.join(TAGGING_METRICS)}")
    return parts[0], parts[1], parts[2], options


def _word_margins(sentences, arrays, logits):
    """Each word's top logit minus its runner-up, in sentence order, from
    the window that owns the word (as `assemble_sentence_predictions`
    picks its label)."""
    from bert_tf.tasks.tagging import features as tagging_features
    top_two = np.sort(logits, axis=-1)[..., -2:]
    margins = top_two[..., 1] - top_two[..., 0]
    words = [[None] * len(sentence.words) for sentence in sentences]
    for row in range(len(margins)):
        sentence = words[arrays[tagging_features.SENTENCE_INDEX][row]]
        first_word = arrays[tagging_features.FIRST_WORD][row]
        for slot in np.flatnonzero(
                arrays[tagging_features.LABEL_WEIGHTS][row]):
            sentence[first_word + slot] = float(margins[row][slot])
    return [margin for sentence in words for margin in sentence]


def tagging(model_dir, output_dir, data_dir, options):
    """The `Task` of a run_tagging.py run on `options["files"]` of
    `data_dir` (see `_tagging_options`)."""
    from bert_tf.tasks.tagging import (
        examples as tagging_examples,
        features as tagging_features,
    )
    from bert_tf.tasks.tagging import export as tagging_export_lib
    from bert_tf import finetuning as finetune
    from bert_tf.tasks.tagging import metrics as tagging_metrics
    from bert_tf.text import tokenization
    run = finetune.read_run_description(output_dir)
    if run["task"] != finetune.TAGGING:
        raise ValueError(f"{output_dir}: a {run['task']} run, not tagging")
    label_list = run["label_list"]
    sentences = []
    for name in options["files"].split("+"):
        tagging_file = tagging_examples.read_tagging_file(
            os.path.join(data_dir, name), options["format"])
        tagging_examples.check_labels(tagging_file, label_list,
                                      known_from=f"{output_dir}'s labels")
        sentences.extend(tagging_file.sentences)
    vocab = os.path.join(model_dir, "vocab.txt")
    tokenizer = tokenization.FullTokenizer(vocab, run["do_lower_case"])
    max_seq_length, doc_stride = run["max_seq_length"], run["doc_stride"]
    arrays = tagging_features.windows_to_arrays(
        tagging_features.convert_sentences(
            sentences, label_list, tagging_features.TaggingWindowConfig(
                max_seq_length, doc_stride), tokenizer), max_seq_length)
    def export_as(serving_dtype):
        return tagging_export_lib.tagging_export(
            _config(model_dir), vocab, run["do_lower_case"],
            _checkpoint(output_dir), max_seq_length, doc_stride, label_list,
            run.get("use_crf"), serving_dtype=serving_dtype)

    export = export_as("float32")
    inputs = {name: arrays[name] for name in export.ID_INPUTS}
    gold = [sentence.labels for sentence in sentences]

    def predicted(outputs):
        return tagging_features.assemble_sentence_predictions(
            sentences, arrays, outputs["predicted_ids"], label_list)

    def score(outputs):
        if options["metric"] == ACCURACY:
            return tagging_metrics.token_accuracy(gold, predicted(outputs))
        return tagging_metrics.entity_scores(gold, predicted(outputs))["f1"]

    def entities(labels):
        return {(index,) + entity for index, sentence in enumerate(labels)
                for entity in tagging_metrics.get_entities(sentence)}

    # Entities only where they are what is scored (POS tags are not).
    with_entities = options["metric"] == ENTITY_F1

    def decisions(outputs):
        labels = predicted(outputs)
        words = {"words": [label for sentence in labels
                           for label in sentence]}
        return ({**words, "entities": entities(labels)} if with_entities
                else words)

    sizes = {"words": sum(len(labels) for labels in gold)}
    if with_entities:
        sizes["entities"] = len(entities(gold))
    metric = ("entity F1" if with_entities else "token accuracy"
              ) + " on " + options["files"]
    return Task(export, inputs, metric, sizes, score, decisions,
                lambda outputs: _word_margins(sentences, arrays,
                                              outputs["logits"]),
                export_as)


def span(model_dir, output_dir, dev_file, max_seq_length=48, doc_stride=24,
         max_query_length=16, max_answer_length=16):
    """The `Task` of the replaced-span dev set."""
    from bert_tf.tasks.squad import (
        evaluate as squad_evaluate,
        examples as squad_examples,
        features as squad_features,
    )
    from bert_tf.tasks.squad import export as squad_export_lib
    from bert_tf.tasks.squad import postprocess as squad_postprocess
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
    def export_as(serving_dtype):
        return squad_export_lib.squad_export(
            _config(model_dir), vocab, True, _checkpoint(output_dir),
            max_seq_length, doc_stride, max_query_length, 20,
            max_answer_length, serving_dtype=serving_dtype)

    export = export_as("float32")
    with open(dev_file, encoding="utf-8") as reader:
        dataset = json.load(reader)["data"]

    def predicted(outputs):
        results = [squad_postprocess.RawResult(f.unique_id, start, end)
                   for f, start, end in zip(features, outputs["start_logits"],
                                            outputs["end_logits"])]
        predictions, _, _ = squad_postprocess.compute_predictions(
            examples, features, results,
            squad_postprocess.SquadPostprocessConfig(
                max_answer_length=max_answer_length), True)
        return predictions

    def decisions(outputs):
        predictions = predicted(outputs)
        return {"questions": [predictions[example.qas_id]
                              for example in examples]}

    return Task(export, arrays, "dev F1", {"questions": len(examples)},
                lambda outputs: squad_evaluate.evaluate_v1(
                    dataset, predicted(outputs))["f1"] / 100,
                decisions, lambda outputs: None, export_as)


def changed(reference, other):
    """How many units two contenders decide differently: positions that
    differ (lists), or items in only one of them (sets)."""
    if isinstance(reference, set):
        return len(reference ^ other)
    return sum(a != b for a, b in zip(reference, other))


def margin_summary(margins, flipped):
    """A line on how borderline the `flipped` word indices were in float32:
    their median margin, all words' median, and how many of them are among
    the 5% smallest margins."""
    margins = np.asarray(margins)
    if not flipped:
        return "no word changed"
    small = np.quantile(margins, 0.05)
    ours = margins[flipped]
    return (f"float32 margin of the changed words: median {np.median(ours):.2f}"
            f" (all words {np.median(margins):.2f}); "
            f"{int(np.sum(ours <= small))} of {len(ours)} among the 5% "
            f"smallest (<= {small:.2f})")


def reference_of(contender):
    """The float32 contender an int8 or bfloat16 one is compared with
    (a float32 one: itself)."""
    return ("TF float32" if contender in ("Keras int8", "TF bfloat16")
            else contender.replace("int8", "float32"))


def evaluate(task, contenders):
    """{"scores", "changed", "margins"} of `task` through `contenders`:
    each contender's score, and for each int8 or bfloat16 one the units it
    decides differently from its float32 reference (and, for tagging, how
    borderline the changed words were there)."""
    outputs = {contender: _batched(run, task.arrays) for contender, run in
               _runtimes(task, contenders).items()}
    result = {"scores": {}, "changed": {}, "margins": {}}
    decisions = {}
    for contender, values in outputs.items():
        result["scores"][contender] = task.score(values)
        decisions[contender] = task.decisions(values)
    for contender in outputs:
        reference = reference_of(contender)
        if reference == contender or reference not in outputs:
            continue
        result["changed"][contender] = {
            unit: changed(decisions[reference][unit], decisions[contender][unit])
            for unit in decisions[contender]}
        margins = task.margins(outputs[reference])
        if margins is not None:
            words = decisions[reference]["words"]
            flipped = [index for index, (a, b) in enumerate(
                zip(words, decisions[contender]["words"])) if a != b]
            result["margins"][contender] = margin_summary(margins, flipped)
    return result


def _print_task(name, task, result, seconds):
    sizes = ", ".join(f"{count:,} {unit}" for unit, count in task.sizes.items())
    print(f"{name} ({task.metric}; {sizes}; {seconds:.0f} s):")
    scores = result["scores"]
    for contender, score in scores.items():
        line = f"  {contender:<15} {score * 100:6.2f}"
        if contender in result["changed"]:
            reference = reference_of(contender)
            counts = ", ".join(
                f"{count:,} {unit}" for unit, count in
                result["changed"][contender].items())
            line += (f"   - {reference}: "
                     f"{(score - scores[reference]) * 100:+.2f} points; "
                     f"changed: {counts}")
        print(line)
        if contender in result["margins"]:
            print(f"  {'':<15} {result['margins'][contender]}")


def build_parser():
    """The command line's parser (tests parse the README's command with it)."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--model_dir", required=True,
                        help="vocab.txt and bert_config.json of the model")
    parser.add_argument("--sentiment", help="OUTPUT_DIR,DATA_DIR")
    parser.add_argument("--tagging", action="append", default=[],
                        help="NAME,OUTPUT_DIR,DATA_DIR[,format=F]"
                             "[,metric=entity_f1|accuracy][,files=A+B] "
                             "(repeatable)")
    parser.add_argument("--span", help="OUTPUT_DIR,DEV_JSON")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--contenders", default=",".join(CONTENDERS),
                        help="a comma-separated subset of: "
                             + ", ".join(CONTENDERS))
    harness.records.add_arguments(parser, timed=False)
    return parser


def main():
    parser = build_parser()
    args = parser.parse_args()
    contenders = args.contenders.split(",")
    unknown = sorted(set(contenders) - set(CONTENDERS))
    if unknown:
        parser.error(f"--contenders: unknown {', '.join(unknown)} (known: "
                     f"{', '.join(CONTENDERS)})")
    tasks = []  # (name, make the Task)
    if args.sentiment:
        tasks.append(("sentiment", lambda: sentiment(
            args.model_dir, *args.sentiment.split(","))))
    for spec in args.tagging:
        try:
            name, output_dir, data_dir, options = _tagging_options(spec)
        except ValueError as error:
            parser.error(str(error))
        tasks.append((name, lambda output_dir=output_dir, data_dir=data_dir,
                      options=options: tagging(args.model_dir, output_dir,
                                               data_dir, options)))
    if args.span:
        tasks.append(("span", lambda: span(args.model_dir,
                                           *args.span.split(","))))
    if not tasks:
        parser.error("no task: give --sentiment, --tagging or --span")
    results = {}
    record = harness.records.Record("quantization_accuracy", args,
                                    timed=False)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name, make in tasks:
        start = time.time()
        try:
            task = make()
        except (OSError, ValueError) as error:  # a bad path or file
            parser.exit(2, f"{parser.prog}: error: {name}: {error}\n")
        result = evaluate(task, contenders)
        results[name] = {"metric": task.metric, "sizes": task.sizes,
                         **result}
        _print_task(name, task, result, time.time() - start)
        record.add(f"{name} ({task.metric})",
                   {contender: [score] for contender, score
                    in result["scores"].items()},
                   unit="score", lower_is_better=False,
                   details={"sizes": task.sizes, "changed": result["changed"],
                            "margins": result["margins"]})
    record.write()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as writer:
            json.dump(results, writer, indent=2)


if __name__ == "__main__":
    main()
