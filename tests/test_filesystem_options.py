"""Every command that reads or writes a run (run, status, calibrate, compare,
view) takes the same filesystem options (--s3_region_name, --hdfs_host, ...),
parsed in one place (pipeline/filesystems.py) and handed to Beam's FileSystems;
a URL whose scheme needs an option that is missing is one clear line (exit 2);
credentials never come from the command line and are never echoed."""
from __future__ import annotations

import os

import pytest
from apache_beam.io.filesystem import FileMetadata
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.localfilesystem import LocalFileSystem

from pipeline import cli
from pipeline.cli import run
from tests.conftest import write_cases
from tests.pipeline_helpers import run_cli

CONFIG = ("bots:\n  - {name: recorded, type: precomputed}\n  - {name: echo, type: precomputed}\n"
          "metrics: [exact_match, bleu, rougeL]\n")
FS_FLAGS = ["--s3_region_name=eu-west-1", "--s3_endpoint_url", "http://127.0.0.1:9",
            "--hdfs_host=namenode", "--hdfs_port", "9870", "--hdfs_user=evals"]
SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"


def _command(name: str, output: str) -> list[str]:
    return {"status": ["status", "--output", output, "--run-id", "a"],
            "calibrate": ["calibrate", "--output", output, "--run-id", "a"],
            "compare": ["compare", "--output", output, "--baseline", "a", "--candidate", "b"],
            "view": ["view", "--output", output, "--port", "0"],
            "run": ["run", "--input", output + "/cases.parquet", "--output", output + "/o"],
            }[name]


COMMANDS = ("run", "status", "calibrate", "compare", "view")


def test_every_command_reading_or_writing_a_run_lists_the_filesystem_options():
    parser = cli._parser()
    subs = next(a for a in parser._actions if a.dest == "command").choices
    assert set(COMMANDS) <= set(subs)
    for name in COMMANDS:
        help_text = subs[name].format_help()
        for flag in ("--s3_region_name", "--s3_endpoint_url", "--hdfs_host", "--hdfs_port",
                     "--hdfs_user"):
            assert flag in help_text, (name, flag)
        assert "--s3_secret_access_key" not in help_text


@pytest.mark.parametrize("name", COMMANDS)
def test_the_options_reach_beams_filesystems(monkeypatch, tmp_path, capsys, name):
    """Before: `status --hdfs_host ...` was 'unexpected argument' and status,
    calibrate, compare and view handed FileSystems empty options."""
    monkeypatch.setattr(FileSystems, "_pipeline_options", None)
    seen = {}

    def serve(output, port):  # view: stop before serving
        seen["served"] = output
        return 0
    monkeypatch.setattr("pipeline.viewer.server.serve", serve)
    argv = _command(name, str(tmp_path)) + FS_FLAGS
    if name == "run":
        argv += ["--s3_disable_ssl"]
    code = run(argv)
    capsys.readouterr()
    assert code in (0, 2)
    given = FileSystems._pipeline_options.get_all_options(retain_unknown_options=True)
    assert given["s3_region_name"] == "eu-west-1"
    assert given["s3_endpoint_url"] == "http://127.0.0.1:9"
    assert (given["hdfs_host"], given["hdfs_port"], given["hdfs_user"]) == \
        ("namenode", "9870", "evals")
    assert given["s3_disable_ssl"] is (name == "run")


@pytest.mark.parametrize("name", COMMANDS)
def test_an_hdfs_url_without_its_options_is_one_line(tmp_path, capsys, name):
    """Before: status/calibrate said 'no usable filesystem ... Failed to import
    hdfs' whether or not the options were there (they could not be given), and
    a run only failed once Beam built the filesystem."""
    argv = [a.replace(str(tmp_path), "hdfs:///evals") for a in _command(name, str(tmp_path))]
    assert run(argv + ["--hdfs_host", "namenode"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("evalbeam: error: --output is on hdfs://, which needs --hdfs_host, "
                           "--hdfs_port, --hdfs_user (missing: --hdfs_port, --hdfs_user)") \
        or (name == "run" and "--input is on hdfs://" in err and err.count("\n") == 1)


def test_the_api_checks_the_same_options(tmp_path):
    import evalbeam
    from pipeline.plan import UsageError
    with pytest.raises(UsageError, match="--output is on hdfs://, which needs"):
        evalbeam.evaluate([{"question": "q?", "answer": "a"}], output="hdfs:///evals/out")


def _two_labelled_runs(tmp_path) -> str:
    rows = [{"case_id": f"c{i}", "question": f"Question {i} about refunds?",
             "expected_answer": "Refunds take 30 days.",
             "answer": f"Refunds take {30 if i % 2 else i} days.",
             "label": "PASS" if i % 2 else "FAIL"} for i in range(8)]
    cases = write_cases(str(tmp_path / "cases.parquet"), rows)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG)
    out = str(tmp_path / "out")
    for run_id in ("a", "b"):
        assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                       "--run-id", run_id, "--run-date", "2026-11-27", *FS_FLAGS) == 0
    return out


def test_a_local_run_still_works_for_every_command_with_the_options(monkeypatch, tmp_path,
                                                                    capsys):
    out = _two_labelled_runs(tmp_path)
    served = []
    monkeypatch.setattr("pipeline.viewer.server.serve", lambda output, port: served.append(
        output) or 0)
    assert run(["status", "--output", out, "--run-id", "b", *FS_FLAGS]) == 0
    assert "finished" in capsys.readouterr().out
    assert run(["calibrate", "--output", out, "--run-id", "b", "--bot", "recorded",
                *FS_FLAGS]) == 0
    assert os.path.exists(os.path.join(out, "runs", "b", "calibration.md"))
    assert run(["compare", "--output", out, "--baseline", "a", "--candidate", "b",
                *FS_FLAGS]) == 0
    assert os.path.isdir(os.path.join(out, "comparisons"))
    assert run(["view", "--output", out, "--port", "0", *FS_FLAGS]) == 0 and served == [out]


@pytest.mark.parametrize("name", COMMANDS)
def test_no_command_echoes_a_credential(monkeypatch, tmp_path, capsys, name):
    """Before: `status --output s3://KEY:SECRET@bucket/out` printed the URL, secret
    and all, in its error ('cannot read s3://KEY:SECRET@...'), a run would have
    recorded it in the manifest and its summary lines, and
    `--s3_secret_access_key=SECRET` was 'unexpected argument
    '--s3_secret_access_key=SECRET'' (run: handed to Beam, into a remote job's
    options). Credentials come only from the environment."""
    monkeypatch.setattr("pipeline.viewer.server.serve", lambda output, port: 0)
    base = _command(name, str(tmp_path))
    attempts = [
        [a.replace(str(tmp_path), f"s3://AKIAEXAMPLE:{SECRET}@bucket") for a in base],
        [a.replace(str(tmp_path), f"hdfs://evals:{SECRET}@namenode:9870/evals") for a in base]
        + ["--hdfs_host=nn", "--hdfs_port=9870", "--hdfs_user=evals"],
        " ".join(base).replace(f"--output {tmp_path}", f"--output=s3://{SECRET}@bucket")
        .split(),
        base + [f"--s3_secret_access_key={SECRET}"],
        base + ["--s3_secret_access_key", SECRET],
        base + [f"--s3_access_key_id={SECRET}"],
        base + [f"--s3_session_token={SECRET}"],
        base + [f"--s3_secret={SECRET}"],  # abbreviated
        # round 4: Beam's Azure flag ('unexpected argument '--azure_connection_string=...''
        # for status, calibrate, compare and view; handed to Beam by run)
        base + [f"--azure_connection_string=AccountName=a;AccountKey={SECRET}"],
        base + ["--azure_connection_string", f"AccountName=a;AccountKey={SECRET}"],
        # round 5: a signed URL's query ('cannot list input gs://b/c?X-Goog-Signature=...')
        [a.replace(str(tmp_path), f"gs://bucket/evals?X-Goog-Signature={SECRET}") for a in base],
        [a.replace(str(tmp_path), f"s3://bucket/evals?X-Amz-Credential=AKIA&sig={SECRET}")
         for a in base],
    ]
    for argv in attempts:
        code = run(argv)
        out, err = capsys.readouterr()
        assert code == 2, argv
        assert SECRET not in out + err, argv
        assert err.startswith("evalbeam: error: ") and err.count("\n") == 1, err
        assert "environment" in err, err
    assert not os.path.exists(tmp_path / "o")


@pytest.mark.parametrize("name", ("status", "calibrate", "view"))
def test_an_unexpected_argument_is_named_without_its_value(tmp_path, capsys, name):
    """Round 4: 'unexpected argument '--api_key=SECRET'' quoted the value (and a
    stray long token, as a key pasted after a flag that takes none, whole)."""
    monkeypatch_serve = pytest.MonkeyPatch()
    monkeypatch_serve.setattr("pipeline.viewer.server.serve", lambda output, port: 0)
    base = _command(name, str(tmp_path))
    try:
        for extra, said in (([f"--api_key={SECRET}"], "'--api_key=…'"),
                            (["--verbose"], "'--verbose'"),
                            ([SECRET], f"a text of {len(SECRET)} characters (not shown)"),
                            (["extra"], "'extra'")):
            assert run(base + extra) == 2
            out, err = capsys.readouterr()
            assert SECRET not in out + err and said in err, err
    finally:
        monkeypatch_serve.undo()
    compare = _command("compare", str(tmp_path)) + [f"--api_key={SECRET}"]
    assert run(compare) == 2
    assert SECRET not in capsys.readouterr().err


def test_a_run_with_keys_in_the_environment_records_none(monkeypatch, tmp_path, capsys):
    from tests.pipeline_helpers import all_output_text
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA" + SECRET[:12])
    cases = write_cases(str(tmp_path / "cases.parquet"),
                        [{"question": "How long do refunds take?", "answer": "30 days."}])
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--run-id", "k", *FS_FLAGS) == 0
    printed = capsys.readouterr()
    text = all_output_text(out) + printed.out + printed.err
    assert "manifest.json" in os.listdir(os.path.join(out, "runs", "k"))
    assert SECRET not in text and SECRET[:12] not in text


class OptionsNeeded(LocalFileSystem):
    """A filesystem that, like hdfs:// (or s3:// at a private endpoint), can
    only be used with the options the command was given: `optfs:///abs/path`
    is the local /abs/path, and every use records the options it was made with
    (None fails, as Beam's HDFS and S3 filesystems do)."""

    made_with: list = []

    @classmethod
    def scheme(cls):
        return "optfs"

    def __init__(self, pipeline_options):
        if pipeline_options is None:
            raise ValueError("pipeline_options is not set")
        given = pipeline_options.get_all_options(retain_unknown_options=True)
        if given.get("hdfs_host") is None:
            raise ValueError("hdfs_host is not set")
        self.made_with.append(given)
        super().__init__(pipeline_options)

    @staticmethod
    def _local(path):
        return path[len("optfs://"):] if path.startswith("optfs://") else path

    def _paths(self, paths):
        return [self._local(p) for p in paths]

    def join(self, basepath, *paths):
        return "/".join([basepath.rstrip("/"), *paths])

    def split(self, path):
        head, tail = os.path.split(self._local(path))
        return "optfs://" + head, tail

    def _list(self, dir_or_prefix):
        for m in super()._list(self._local(dir_or_prefix)):
            yield FileMetadata("optfs://" + m.path, m.size_in_bytes, m.last_updated_in_seconds)

    def exists(self, path):
        return super().exists(self._local(path))

    def mkdirs(self, path):
        return super().mkdirs(self._local(path))

    def create(self, path, *args, **kwargs):
        return super().create(self._local(path), *args, **kwargs)

    def open(self, path, *args, **kwargs):
        return super().open(self._local(path), *args, **kwargs)

    def size(self, path):
        return super().size(self._local(path))

    def last_updated(self, path):
        return super().last_updated(self._local(path))

    def checksum(self, path):
        return super().checksum(self._local(path))

    def metadata(self, path):
        m = super().metadata(self._local(path))
        return FileMetadata(path, m.size_in_bytes, m.last_updated_in_seconds)

    def delete(self, paths):
        return super().delete(self._paths(paths))

    def rename(self, sources, destinations):
        return super().rename(self._paths(sources), self._paths(destinations))

    def copy(self, sources, destinations):
        return super().copy(self._paths(sources), self._paths(destinations))


def test_runs_on_a_filesystem_that_needs_options_are_read_by_every_command(monkeypatch, tmp_path,
                                                                          capsys):
    """Before: status read the manifest through Beam but calibrate's tables
    went through pyarrow's own filesystem for the URL (which knows no
    --s3_endpoint_url or --hdfs_host, and no scheme Beam alone knows), and
    compare and view refused any URL ('copy the tables or mount the bucket')."""
    out = _two_labelled_runs(tmp_path)
    url = "optfs://" + out
    served = []
    monkeypatch.setattr("pipeline.viewer.server.serve", lambda output, port: served.append(
        output) or 0)
    OptionsNeeded.made_with.clear()
    monkeypatch.setattr(FileSystems, "_pipeline_options", None)
    assert run(["status", "--output", url, "--run-id", "b"]) == 2  # without its options
    assert "hdfs_host is not set" in capsys.readouterr().err
    assert run(["status", "--output", url, "--run-id", "b", *FS_FLAGS]) == 0
    assert "finished" in capsys.readouterr().out
    assert run(["calibrate", "--output", url, "--run-id", "b", "--bot", "recorded",
                *FS_FLAGS]) == 0, capsys.readouterr().err
    assert "calibrat" in capsys.readouterr().out
    assert os.path.exists(os.path.join(out, "runs", "b", "calibration.md"))
    assert run(["compare", "--output", url, "--baseline", "a", "--candidate", "b",
                *FS_FLAGS]) == 0, capsys.readouterr().err
    assert "paired cases" in capsys.readouterr().out
    assert os.path.exists(os.path.join(out, "runs", "b", "compare", "a.md")) or \
        os.listdir(os.path.join(out, "runs", "b", "compare"))
    assert os.listdir(os.path.join(out, "comparisons"))
    assert not os.path.exists("optfs:")  # nothing written to a local folder named like the URL
    assert run(["view", "--output", url, "--port", "0", *FS_FLAGS]) == 0 and served == [url]
    from pipeline.viewer.data import Catalog, report_file
    catalog = Catalog(url, prefetch=False)  # what the viewer's pages ask of the folder
    try:
        finished, problems = catalog.runs()
        assert [m["run_id"] for m in finished] == ["b", "a"] and problems == []
        loaded = catalog.run("b")
        case = catalog.case(loaded, "c1", catalog.cursor())
        assert case is not None
        assert report_file(url, "b", loaded.run.attempt) == url + "/runs/b/report.html"
    finally:
        catalog.close()
    import evalbeam
    monkeypatch.setattr(FileSystems, "_pipeline_options", None)
    result = evalbeam.read_run(url, "b", hdfs_host="namenode", hdfs_port=9870,
                               hdfs_user="evals", s3_disable_ssl=True)
    assert result.results().num_rows == 16 and result.scores().num_rows > 16
    with pytest.raises(TypeError, match="'s3_secret_access_key'"):
        evalbeam.read_run(url, "b", s3_secret_access_key=SECRET)
    assert OptionsNeeded.made_with and all(
        g["hdfs_host"] == "namenode" for g in OptionsNeeded.made_with)


@pytest.mark.parametrize("argv", [
    ["view", "--output", "o", "--port", SECRET],
    ["run", "--input", "i", "--output", "o", "--lease-ttl", SECRET],
    ["compare", "--output", "o", "--baseline", "a", "--candidate", "b",
     "--min-difference", SECRET],
    ["run", "--input", "i", "--output", "o", "--run-date", SECRET],
    ["run", "--input", "i", "--output", "o", f"--direct_num_workers={SECRET}"],
    ["run", "--input", "i", "--output", "o", f"--direct_running_mode={SECRET}"],
    [SECRET],  # `evalbeam $OPENAI_API_KEY ...`: a key where the command goes
    [SECRET, "--output", "o", "--run-id", "r"],
])
def test_a_key_typed_into_a_typed_flag_is_not_echoed(tmp_path, capsys, monkeypatch, argv):
    """Round 4: 'argument --port: invalid int value: 'SECRET'' (argparse), '--run-date
    'SECRET' is not a date', 'Beam option: ... invalid int value: 'SECRET''."""
    monkeypatch.chdir(tmp_path)
    try:
        code = run(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and "error" in err, err
    assert SECRET not in out + err and SECRET[:8] not in out + err, err
    assert "not shown" in err, err


def test_a_run_to_a_url_without_its_filesystem_is_one_line_before_anything(tmp_path, capsys):
    """Before: `run --output gs://...` without apache-beam[gcp] (or s3:// without
    boto3, or memory://, which Beam has no filesystem for) planned the run and
    then printed a traceback of Beam's ValueError or BeamIOError, exit 1;
    status, compare and calibrate said one line. The same line, with 'write to',
    exit 2; and memory:// is not sent to install apache-beam[gcp]."""
    import importlib.util
    cases = write_cases(str(tmp_path / "cases.parquet"),
                        [{"question": "How long do refunds take?", "answer": "30 days."}])
    urls = {"memory://out": "Beam has no filesystem for it"}
    if importlib.util.find_spec("google.cloud") is None:
        urls["gs://no-such-bucket/out"] = "install apache-beam[gcp]"
    if importlib.util.find_spec("boto3") is None:
        urls["s3://no-such-bucket/out"] = "install apache-beam[aws]"
    for url, needs in urls.items():
        capsys.readouterr()
        assert run_cli("--input", cases, "--output", url, "--run-id", "u") == 2
        err = capsys.readouterr().err
        assert err.startswith(f"evalbeam: error: cannot write to {url}: no usable filesystem "
                              f"for {url.split('://')[0]}:// here ({needs}") and \
            err.count("\n") == 1, err


@pytest.mark.parametrize("argv, blocked", [
    (["calibrate", "--run-id", "b", "--bot", "recorded"], "calibration"),
    (["compare", "--baseline", "a", "--candidate", "b"], "comparisons")])
def test_a_url_output_it_cannot_write_in_is_refused_before_the_work(tmp_path, capsys, argv,
                                                                    blocked):
    """Before: check_writable skipped URL outputs ('said when it is written'):
    a bucket calibrate or compare could not write in was found after the work,
    as a traceback of the filesystem's error, exit 1. Now a probe (a small
    file made and deleted) in each folder it writes, before the work: one
    line, exit 2, nothing written. Here the URL's folder is a file."""
    out = _two_labelled_runs(tmp_path)
    with open(os.path.join(out, blocked), "w") as fh:
        fh.write("not a folder")
    before = sorted(os.walk(out))
    capsys.readouterr()
    url = "optfs://" + out
    assert run([argv[0], "--output", url, *argv[1:], *FS_FLAGS]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"evalbeam: error: --output {url}: cannot write in {url}/{blocked}/") \
        and err.count("\n") == 1, err
    assert sorted(os.walk(out)) == before
