#pragma once
// Sharded checkpoints (principle 16, docs/principles.md), in six parts:
//   sharded_checkpoint_box       the region of a tensor a piece holds or a request asks for
//   sharded_checkpoint_writer    one rank's data file
//   sharded_checkpoint_manifest  the manifest written last, from every rank's record
//   sharded_checkpoint_reader    loading any region under any layout, by box intersection
//   sharded_checkpoint_run       step folders, the `latest` pointer, keep-K, fallback on damage
//   sharded_checkpoint_compat    the old single-file format refused; config differences named
#include "io/sharded_checkpoint_box.h"
#include "io/sharded_checkpoint_compat.h"
#include "io/sharded_checkpoint_manifest.h"
#include "io/sharded_checkpoint_reader.h"
#include "io/sharded_checkpoint_run.h"
#include "io/sharded_checkpoint_writer.h"
