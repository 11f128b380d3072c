"""The filesystem options of every command that reads or writes a run (run,
status, calibrate, compare, view), declared, checked and handed to Beam's
FileSystems in this one place.

    add_filesystem_options(parser)          # the flags, in each command's --help
    urls = check_command_line(argv)         # before parsing: no credential in argv
    options = PipelineOptions(filesystem_args(args))
    use_filesystems(options, urls)          # hdfs:// without --hdfs_host ...: UsageError

gs:// needs no flag (Google's default credentials); s3:// takes its region,
endpoint, ... as flags and its keys from the environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), never from the command line, where
they would show in `ps`, the shell's history and a remote job's options;
hdfs:// needs the namenode's WebHDFS address and a user.
"""
from __future__ import annotations

import argparse
import textwrap
from typing import Iterable, Sequence

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.plan import UsageError
from transforms.remote.scrub import SECRET_NAME

# Beam's flag (its option name) -> (argparse keywords); values go to Beam as given.
FILESYSTEM_FLAGS: dict[str, dict] = {
    "s3_region_name": {"metavar": "REGION", "help": "s3:// : the bucket's region"},
    "s3_endpoint_url": {"metavar": "URL",
                        "help": "s3:// : the S3 API's address, for MinIO, Ceph, R2, ..."},
    "s3_api_version": {"metavar": "VERSION", "help": "s3:// : the S3 API version"},
    "s3_verify": {"metavar": "CA_BUNDLE",
                  "help": "s3:// : the CA bundle that verifies the endpoint's certificate"},
    "s3_disable_ssl": {"action": "store_true", "help": "s3:// : plain HTTP to the endpoint"},
    "hdfs_host": {"metavar": "HOST", "help": "hdfs:// : the namenode's host (required)"},
    "hdfs_port": {"metavar": "PORT", "help": "hdfs:// : the namenode's WebHDFS port (required)"},
    "hdfs_user": {"metavar": "USER", "help": "hdfs:// : the HDFS user (required)"},
    "hdfs_full_urls": {"action": "store_true",
                       "help": "hdfs:// : URLs name a server (hdfs://server/path), which is "
                               "not used (--hdfs_host and --hdfs_port are)"},
}

# A scheme's options without which Beam cannot open its paths.
REQUIRED = {"hdfs": ("hdfs_host", "hdfs_port", "hdfs_user")}

# Beam's credential flags and the environment variable that replaces each.
CREDENTIAL_FLAGS = {"--s3_access_key_id": "AWS_ACCESS_KEY_ID",
                    "--s3_secret_access_key": "AWS_SECRET_ACCESS_KEY",
                    "--s3_session_token": "AWS_SESSION_TOKEN",
                    "--azure_connection_string": "AZURE_STORAGE_CONNECTION_STRING"}

GROUP_TITLE = "filesystem options (outputs, inputs on s3:// or hdfs://)"
GROUP_TEXT = ("gs:// needs none; s3:// keys come from the environment (AWS_ACCESS_KEY_ID, "
              "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or the AWS config, never from a "
              "flag or a URL")


def add_filesystem_options(parser: argparse.ArgumentParser) -> None:
    """The filesystem flags, as one group of a command's --help."""
    group = parser.add_argument_group(GROUP_TITLE, textwrap.fill(GROUP_TEXT, 76))
    for name, keywords in FILESYSTEM_FLAGS.items():
        group.add_argument(f"--{name}", dest=f"fs_{name}", **keywords)


def filesystem_args(args: argparse.Namespace) -> list[str]:
    """The filesystem flags given, as Beam's flags again."""
    out = []
    for name, keywords in FILESYSTEM_FLAGS.items():
        value = getattr(args, f"fs_{name}", None)
        if keywords.get("action") == "store_true":
            out += [f"--{name}"] if value else []
        elif value is not None:
            out.append(f"--{name}={value}")
    return out


def _value_of(argv: Sequence[str], i: int) -> tuple[str, str]:
    """The flag a token of argv belongs to, and its value."""
    token = argv[i]
    if token.startswith("--") and "=" in token:
        flag, _, value = token.partition("=")
        return flag, value
    before = argv[i - 1] if i else ""
    return (before if before.startswith("--") else "an argument"), token


def check_command_line(argv: Sequence[str]) -> list[tuple[str, str]]:
    """The (flag, URL) pairs of argv; UsageError, without echoing the value, for
    a credential given as a flag or inside a URL (scheme://user:password@...)."""
    urls = []
    for i, token in enumerate(argv):
        name = token.partition("=")[0]
        for flag, env in CREDENTIAL_FLAGS.items():  # also abbreviated, or with a typo's tail
            if len(name) >= len("--s3_acc") and (flag.startswith(name) or name.startswith(flag)):
                raise UsageError(f"{flag} is refused: a credential on the command line shows in "
                                 f"ps, the shell's history and the job's options; set {env} in "
                                 "the environment instead")
        flag, value = _value_of(argv, i)
        scheme, sep, rest = value.partition("://")
        if not sep or not scheme.replace("+", "").isalnum():
            continue
        if "@" in rest.split("/", 1)[0]:
            raise UsageError(f"{flag}: a URL with a user or password in it "
                             f"({scheme}://user:password@...) is refused: it would show in every "
                             "output, log and manifest; give credentials through the "
                             "environment (and --hdfs_user for HDFS)")
        if signed_query(rest):
            raise UsageError(f"{flag}: a URL whose query carries a credential (a signed URL's "
                             "?X-Goog-Signature=, ?X-Amz-Signature=, ?sig=, ?token=) is refused: "
                             "it would show in every output, log and manifest; give "
                             "credentials through the environment")
        urls.append((flag, value))
    return urls


def signed_query(rest: str) -> bool:
    """Whether the part of a URL after scheme:// has a query naming a credential
    (?X-Goog-Signature=..., ?X-Amz-Credential=..., Azure's ?sig=...). A `?` alone
    is a glob character (part-?.parquet), and part-?/run_date=... no query."""
    names = [p.partition("=")[0] for query in rest.split("?")[1:] for p in query.split("&")
             if "=" in p]
    return any(SECRET_NAME.search(n) or n.lower() == "sig" for n in names if "/" not in n)


def use_filesystems(options: PipelineOptions, urls: Iterable[tuple[str, str]]) -> None:
    """Hand Beam's FileSystems the options (s3:// and hdfs:// cannot be used
    without them), after checking that each URL's scheme has what it needs."""
    given = options.get_all_options(retain_unknown_options=True)
    for flag, url in urls:
        scheme = url.partition("://")[0].lower()
        missing = [f"--{name}" for name in REQUIRED.get(scheme, ()) if given.get(name) in
                   (None, "")]
        if missing:
            needs = ", ".join(f"--{n}" for n in REQUIRED[scheme])
            raise UsageError(f"{flag} is on {scheme}://, which needs {needs} (missing: "
                             f"{', '.join(missing)})")
    FileSystems.set_options(options)
