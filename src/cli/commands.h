#pragma once
#include "cli/args.h"

namespace ff::cli {

int cmd_prepare(const Args& a);
int cmd_train(const Args& a);
int cmd_sample(const Args& a);
int cmd_eval(const Args& a);
int cmd_export(const Args& a);
int cmd_schedule(const Args& a);
int cmd_plan(const Args& a);
int cmd_verify(const Args& a);
int cmd_calibrate(const Args& a);
int cmd_report(const Args& a);
int cmd_import(const Args& a);
int cmd_tokenize(const Args& a);
// These two run without MPI (launch starts mpirun; diagnose reads files) and take the raw words.
int cmd_launch(int argc, char** argv);
int cmd_diagnose(int argc, char** argv);

}  // namespace ff::cli
