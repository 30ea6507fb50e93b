#!/usr/bin/env python3
"""An independent reader of a run's TensorBoard event files.

It shares nothing with fivefold's writer: the Event message is declared here and compiled with
protoc (Debian's protobuf-compiler), parsed by Debian's python3-protobuf, and each record's
framing is checked with a CRC-32C computed bit by bit below. Every scalar must equal the float32
of metrics.jsonl's value for that step and tag, every step of metrics.jsonl must be there, and
each file's config text must be its run's config.toml (the last file's: the folder's).

  check_tensorboard.py RUN_DIR [--require=TAG]...  # checks RUN_DIR's event file(s) against its
                                                   # metrics.jsonl; some step must have each TAG
  check_tensorboard.py RUN_DIR --selftest  # damaged copies of them must each be refused
"""
import glob
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

EVENT_PROTO = """
syntax = "proto3";
package tensorboard;
message SessionLog {
  enum SessionStatus { STATUS_UNSPECIFIED = 0; START = 1; STOP = 2; CHECKPOINT = 3; }
  SessionStatus status = 1;
  string checkpoint_path = 2;
  string msg = 3;
}
message TensorShapeProto {}
message TensorProto {
  int32 dtype = 1;  // DataType: DT_STRING = 7
  TensorShapeProto tensor_shape = 2;
  repeated bytes string_val = 8;
}
message SummaryMetadata {
  message PluginData { string plugin_name = 1; bytes content = 2; }
  PluginData plugin_data = 1;
}
message Summary {
  message Value {
    string node_name = 7;
    string tag = 1;
    oneof value { float simple_value = 2; TensorProto tensor = 8; }
    SummaryMetadata metadata = 9;
  }
  repeated Value value = 1;
}
message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what {
    string file_version = 3;
    bytes graph_def = 4;
    Summary summary = 5;
    SessionLog session_log = 7;
  }
}
"""

# metrics.jsonl key -> TensorBoard tag; the record's "bytes" become memory/<category>_mib.
TAGS = {
    "loss": "train/loss",
    "lr": "train/lr",
    "grad_norm": "train/grad_norm",
    "loss_scale": "train/loss_scale",
    "val_loss": "val/loss",
    "tokens_per_s": "perf/tokens_per_s",
    "mfu": "perf/mfu",
    "gemm_ceiling_share": "perf/gemm_ceiling_share",
    "step_seconds": "perf/step_seconds",
}


class Refused(Exception):
    pass


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(payload):
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked(crc32c(length))) + payload + struct.pack("<I", masked(crc32c(payload)))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def compile_event_proto(work):
    with open(os.path.join(work, "ff_tb_event.proto"), "w") as f:
        f.write(EVENT_PROTO)
    subprocess.run(["protoc", f"--proto_path={work}", f"--python_out={work}", "ff_tb_event.proto"], check=True)
    sys.path.insert(0, work)
    import ff_tb_event_pb2
    return ff_tb_event_pb2


def records(path):
    """The payloads of one event file; any damage to the framing is refused."""
    data = open(path, "rb").read()
    at, out = 0, []
    while at < len(data):
        if len(data) - at < 12:
            raise Refused(f"{path}: {len(data) - at} stray bytes at offset {at}")
        length_bytes = data[at:at + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if length_crc != masked(crc32c(length_bytes)):
            raise Refused(f"{path}: length CRC mismatch at offset {at}")
        if at + 12 + length + 4 > len(data):
            raise Refused(f"{path}: record at offset {at} runs past the end")
        payload = data[at + 12:at + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if payload_crc != masked(crc32c(payload)):
            raise Refused(f"{path}: payload CRC mismatch at offset {at}")
        out.append(payload)
        at += 16 + length
    return out


def expected_scalars(metrics_path):
    """{step: {tag: float32 value}} from metrics.jsonl's step records (the last record of a step wins)."""
    want = {}
    for line in open(metrics_path):
        r = json.loads(line)
        if "step" not in r or "loss" not in r:
            continue
        tags = {}
        for key, tag in TAGS.items():
            if key in r:
                tags[tag] = math.nan if r[key] is None else f32(float(r[key]))
        for category, n in r.get("bytes", {}).items():
            tags[f"memory/{category}_mib"] = f32(n / 1048576.0)
        tags["wall_time"] = r["time"]  # the event's wall_time is the row's time, to the bit
        want[r["step"]] = tags
    return want


def text_of(path, event):
    """A text summary's (tag, string): one DT_STRING scalar tagged for the text plugin."""
    if len(event.summary.value) != 1:
        raise Refused(f"{path}: step {event.step}: a text event with {len(event.summary.value)} values")
    value = event.summary.value[0]
    tensor = value.tensor
    if value.metadata.plugin_data.plugin_name != "text" or tensor.dtype != 7 or len(tensor.string_val) != 1:
        raise Refused(f"{path}: step {event.step} tag {value.tag}: not a text plugin string scalar")
    return value.tag, tensor.string_val[0].decode("utf-8")


def read_events(pb, run_dir):
    """({step: {tag: value}}, {tag: [text...]}) over the folder's event files in name order, as
    TensorBoard merges them: a SessionLog START at step s drops what earlier files logged at s and after."""
    files = sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))
    if not files:
        raise Refused(f"{run_dir}: no event file")
    got, texts = {}, {}
    for path in files:
        payloads = records(path)
        first = pb.Event.FromString(payloads[0]) if payloads else None
        if first is None or first.WhichOneof("what") != "file_version" or first.file_version != "brain.Event:2":
            raise Refused(f"{path}: the first record is not file_version brain.Event:2")
        for payload in payloads[1:]:
            event = pb.Event.FromString(payload)
            kind = event.WhichOneof("what")
            if kind == "session_log" and event.session_log.status == pb.SessionLog.START:
                got = {s: v for s, v in got.items() if s < event.step}
            elif kind == "summary" and any(v.WhichOneof("value") == "tensor" for v in event.summary.value):
                tag, text = text_of(path, event)
                texts.setdefault(tag, []).append(text)
            elif kind == "summary":
                if event.step in got:
                    raise Refused(f"{path}: step {event.step} logged twice without a restart")
                step = got[event.step] = {"wall_time": event.wall_time}
                for value in event.summary.value:
                    if value.WhichOneof("value") != "simple_value":
                        raise Refused(f"{path}: step {event.step} tag {value.tag} is not a simple_value")
                    step[value.tag] = value.simple_value
            else:
                raise Refused(f"{path}: unexpected event {kind} at step {event.step}")
    return files, got, texts


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


def check(pb, run_dir):
    files, got, texts = read_events(pb, run_dir)
    # Each event file opens with the config its run resolved; the last is config.toml's text.
    config = open(os.path.join(run_dir, "config.toml")).read()
    if len(texts.get("config", [])) != len(files):
        raise Refused(f"{len(texts.get('config', []))} config texts in {len(files)} event files")
    if texts["config"][-1] != "".join("    " + line + "\n" for line in config.splitlines()):
        raise Refused("the last config text is not config.toml's, indented as a Markdown code block")
    want = expected_scalars(os.path.join(run_dir, "metrics.jsonl"))
    if not want:
        raise Refused("metrics.jsonl has no step records")
    if sorted(got) != sorted(want):
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        raise Refused(f"steps differ: missing from the event files {missing}, not in metrics.jsonl {extra}")
    for step, tags in want.items():
        if set(got[step]) != set(tags):
            raise Refused(f"step {step}: tags {sorted(got[step])} but metrics.jsonl gives {sorted(tags)}")
        for tag, value in tags.items():
            if not same(got[step][tag], value):
                raise Refused(f"step {step} {tag}: event file {got[step][tag]!r}, metrics.jsonl float32 {value!r}")
    return files, want


def selftest(pb, run_dir, work):
    """Each damaged copy must be refused: a flipped byte, a step's record removed, another config, a
    value changed."""
    files, _ = check(pb, run_dir)
    source = files[-1]
    payloads = records(source)
    data = open(source, "rb").read()

    def refused(name, content, config_extra=""):
        d = os.path.join(work, name)
        os.makedirs(d)
        shutil.copy(os.path.join(run_dir, "metrics.jsonl"), d)
        with open(os.path.join(d, "config.toml"), "w") as f:
            f.write(open(os.path.join(run_dir, "config.toml")).read() + config_extra)
        for f in files[:-1]:
            shutil.copy(f, d)
        with open(os.path.join(d, os.path.basename(source)), "wb") as f:
            f.write(content)
        try:
            check(pb, d)
        except Refused as e:
            print(f"selftest {name}: refused as it must be ({e})")
            return
        raise SystemExit(f"selftest {name}: the damaged copy was accepted")

    # One bit of the last scalar's float (the 4 bytes before the final CRC).
    at = len(data) - 6
    refused("flipped_byte", data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:])
    refused("step_removed", b"".join(frame(p) for i, p in enumerate(payloads) if i != len(payloads) // 2))
    event = pb.Event.FromString(payloads[-1])
    event.summary.value[0].simple_value = event.summary.value[0].simple_value * 2 + 1
    refused("config_differs", data, config_extra="lr = 1\n")
    refused("value_changed", b"".join(frame(p) for p in payloads[:-1]) + frame(event.SerializeToString()))
    event = pb.Event.FromString(payloads[-1])
    event.wall_time += 1e-3
    refused("time_differs", b"".join(frame(p) for p in payloads[:-1]) + frame(event.SerializeToString()))


def main():
    run_dir = sys.argv[1]
    assert crc32c(b"123456789") == 0xE3069283, "the reader's own CRC-32C is wrong"
    with tempfile.TemporaryDirectory() as work:
        pb = compile_event_proto(work)
        if "--selftest" in sys.argv[2:]:
            selftest(pb, run_dir, work)
            return
        try:
            files, want = check(pb, run_dir)
        except Refused as e:
            raise SystemExit(f"FAIL: {e}")
        # Tags the run must have produced somewhere, or the check proves too little.
        required = ["val/loss", "memory/params_mib"] + [a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--require=")]
        for tag in required:
            if not any(tag in tags for tags in want.values()):
                raise SystemExit(f"FAIL: no step has {tag}: the check proves too little")
        val_steps = [s for s, tags in want.items() if "val/loss" in tags]
        memory_tags = [t for t in next(iter(want.values())) if t.startswith("memory/")]
        print(f"{len(files)} event file(s), {len(want)} steps, every scalar equal to metrics.jsonl's float32 "
              f"(val/loss at steps {val_steps}, {len(memory_tags)} memory tags)")


if __name__ == "__main__":
    main()
