#pragma once
// Sharded checkpoints (principle 16, docs/principles.md), in six parts:
//   sharded_box       the region of a tensor a piece holds or a request asks for
//   sharded_writer    one rank's data file
//   sharded_manifest  the manifest written last, from every rank's record
//   sharded_reader    loading any region under any layout, by box intersection
//   sharded_run       step folders, the `latest` pointer, keep-K, fallback on damage
//   sharded_compat    the old single-file format refused; config differences named
#include "ckpt/sharded_box.h"
#include "ckpt/sharded_compat.h"
#include "ckpt/sharded_manifest.h"
#include "ckpt/sharded_reader.h"
#include "ckpt/sharded_run.h"
#include "ckpt/sharded_writer.h"
