"""The Beam pipeline writes, per shard, the script's records for that shard.

Reference: `create_pretraining_data.py` itself, run once per shard in its own
process with the same flags (what Google's README tells users to do), whose
output matches Google's original (tests/test_create_pretraining_data.py).
The pipeline runs on Beam's local DirectRunner.
"""

import pytest

from runner_harness import run_runner

FLAGS = ["--max_seq_length=48", "--max_predictions_per_seq=7",
         "--random_seed=99", "--dupe_factor=2", "--do_lower_case=True"]


def _shards(tmp_path, golden_dir, count):
    """The golden corpus (Hamlet) split by documents into `count` files."""
    text = (golden_dir / "create_pretraining_data" / "corpus.txt").read_text(
        encoding="utf-8")
    documents = [d for d in text.split("\n\n") if d.strip()]
    shard_dir = tmp_path / "shards"
    shard_dir.mkdir()
    paths = []
    for index in range(count):
        path = shard_dir / f"part-{index}.txt"
        path.write_text("\n\n".join(documents[index::count]) + "\n",
                        encoding="utf-8")
        paths.append(path)
    return paths


def test_pipeline_writes_the_scripts_records_for_each_shard(
        tmp_path, golden_dir, uncased_vocab_file):
    pytest.importorskip("apache_beam")
    import create_pretraining_data_beam

    shards = _shards(tmp_path, golden_dir, 3)
    output_dir = tmp_path / "beam"
    output_dir.mkdir()
    # Google's flags for us, the rest (--runner) for Beam.
    flag_values, pipeline_arguments = (
        create_pretraining_data_beam.parse_command_line([
            f"--input_file={tmp_path / 'shards' / '*.txt'}",
            f"--output_dir={output_dir}",
            f"--vocab_file={uncased_vocab_file}", *FLAGS,
            "--runner=DirectRunner"]))
    assert pipeline_arguments == ["--runner=DirectRunner"]
    create_pretraining_data_beam.run(flag_values, pipeline_arguments)

    outputs = []
    for shard in shards:
        expected = tmp_path / f"{shard.name}.script.tfrecord"
        run_runner("create_pretraining_data.py", None,
                   f"--input_file={shard}", f"--output_file={expected}",
                   f"--vocab_file={uncased_vocab_file}", *FLAGS)
        actual = (output_dir / f"{shard.name}.tfrecord").read_bytes()
        assert actual == expected.read_bytes(), shard.name
        outputs.append(actual)
    assert len(set(outputs)) == 3 and all(outputs)
    assert sorted(p.name for p in output_dir.iterdir()) == [
        f"{shard.name}.tfrecord" for shard in shards]


def test_shards_with_the_same_name_are_refused(tmp_path):
    from bert_tf.pretraining import beam as pretraining_beam
    from bert_tf.pretraining.errors import PretrainingDataError
    with pytest.raises(PretrainingDataError,
                       match=r"input files a/x.txt and b/x.txt have the "
                             r"same name"):
        pretraining_beam.plan_shards(["a/x.txt", "b/x.txt"], str(tmp_path))


def test_missing_output_dir_is_one_line(tmp_path, golden_dir,
                                        uncased_vocab_file):
    shard = _shards(tmp_path, golden_dir, 1)[0]
    result = run_runner(
        "create_pretraining_data_beam.py", None, f"--input_file={shard}",
        f"--output_dir={tmp_path / 'missing'}",
        f"--vocab_file={uncased_vocab_file}", expect_success=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"create_pretraining_data_beam.py: error: --output_dir="
        f"{tmp_path / 'missing'} is not an existing directory")


def test_pipeline_options_pass_through_and_help_lists_our_flags(capsys):
    import create_pretraining_data_beam
    flag_values, pipeline_arguments = (
        create_pretraining_data_beam.parse_command_line([
            "--input_file=a.txt", "--runner", "DataflowRunner",
            "--output_dir=out", "--vocab_file=v.txt", "--nodo_lower_case",
            "--project=p", "--max_seq_length=64"]))
    assert (flag_values.input_file, flag_values.output_dir,
            flag_values.do_lower_case, flag_values.max_seq_length) == (
        "a.txt", "out", False, 64)
    assert pipeline_arguments == ["--runner", "DataflowRunner",
                                  "--project=p"]
    with pytest.raises(SystemExit) as exit_info:
        create_pretraining_data_beam.parse_command_line(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--input_file", "--output_dir", "--vocab_file",
                 "--[no]do_whole_word_mask", "--word_boundaries"):
        assert f"  {flag}:" in out


def test_missing_required_flag_is_one_line(capsys):
    import create_pretraining_data_beam
    with pytest.raises(SystemExit) as exit_info:
        create_pretraining_data_beam.parse_command_line(
            ["--input_file=a.txt", "--vocab_file=v.txt", "--runner=Direct"])
    assert exit_info.value.code == (
        "create_pretraining_data_beam.py: error: flag --output_dir=None: "
        "Flag --output_dir must have a value other than None.")
