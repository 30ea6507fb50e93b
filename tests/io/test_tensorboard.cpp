#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "io/tensorboard/event_proto.h"
#include "io/tensorboard/event_writer.h"
#include "io/tensorboard/metrics_scalars.h"
#include "io/tensorboard/record_crc.h"
#include "io_test_util.h"

using namespace ff;

namespace {

std::string bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(char(b));
  return s;
}

// TensorFlow's mask, written out from its definition.
uint32_t mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

}  // namespace

// The published check value of CRC-32C (Castagnoli) and the test vectors of RFC 3720, B.4.
TEST(Crc32c, PublishedCheckValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0'), ones(32, '\xFF');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) ascending.push_back(char(i)), descending.push_back(char(31 - i));
  EXPECT_EQ(crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
  EXPECT_EQ(crc32c(descending.data(), descending.size()), 0x113FDB5Cu);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(Crc32c, ContinuesFromAPreviousCrc) {
  EXPECT_EQ(crc32c("6789", 4, crc32c("12345", 5)), 0xE3069283u);
}

TEST(Crc32c, MaskIsTensorFlows) { EXPECT_EQ(masked_crc32c("123456789", 9), mask(0xE3069283u)); }

TEST(TfRecord, FramesLengthPayloadAndTheirCrcs) {
  const std::string payload = "abc";
  const std::string rec = frame_record(payload);
  ASSERT_EQ(rec.size(), 8u + 4 + 3 + 4);
  const std::string length = bytes({3, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(rec.substr(0, 8), length);
  const uint32_t lcrc = mask(crc32c(length.data(), 8));
  EXPECT_EQ(rec.substr(8, 4), bytes({int(lcrc & 0xFF), int(lcrc >> 8 & 0xFF), int(lcrc >> 16 & 0xFF), int(lcrc >> 24)}));
  EXPECT_EQ(rec.substr(12, 3), payload);
  const uint32_t pcrc = mask(crc32c("abc", 3));
  EXPECT_EQ(rec.substr(15, 4), bytes({int(pcrc & 0xFF), int(pcrc >> 8 & 0xFF), int(pcrc >> 16 & 0xFF), int(pcrc >> 24)}));
}

// Expected bytes derived by hand from protobuf's wire format (key = field << 3 | wire type).
TEST(EventProto, ScalarEventWireBytes) {
  const std::string got = encode_scalars_event(1.5, 3, {{"a", 1.0f}});
  const std::string want = bytes({0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F,  // wall_time 1.5
                                  0x10, 0x03,                            // step 3
                                  0x2A, 0x0A,                            // summary, 10 bytes
                                  0x0A, 0x08,                            //   value, 8 bytes
                                  0x0A, 0x01, 'a',                       //     tag "a"
                                  0x15, 0, 0, 0x80, 0x3F});              //     simple_value 1.0f
  EXPECT_EQ(got, want);
}

TEST(EventProto, FileVersionAndSessionStartWireBytes) {
  const std::string version = encode_file_version_event(0.0);
  EXPECT_EQ(version, bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0}) + bytes({0x1A, 13}) + "brain.Event:2");
  // step 300 = 0b10_0101100: varint 0xAC 0x02; session_log (field 7) { status (1) = START (1) }.
  EXPECT_EQ(encode_session_start_event(0.0, 300),
            bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0xAC, 0x02, 0x3A, 0x02, 0x08, 0x01}));
}

TEST(MetricsScalars, TagsAndFloat32OfTheRecord) {
  const nlohmann::json rec = {{"step", 7},          {"loss", 2.25},         {"lr", 0.001},
                              {"grad_norm", nullptr}, {"val_loss", 2.5},    {"tokens_per_s", 1234.5},
                              {"mfu", 0.125},       {"peak_flops", 1e12},   {"bytes", {{"weights", 3 << 20}, {"peak_total", 1 << 19}}}};
  const std::vector<TensorBoardScalar> s = tensorboard_scalars(rec);
  std::vector<std::string> tags;
  for (const auto& x : s) tags.push_back(x.tag);
  EXPECT_EQ(tags, (std::vector<std::string>{"train/loss", "train/lr", "train/grad_norm", "val/loss",
                                            "perf/tokens_per_s", "perf/mfu", "memory/peak_total_mib",
                                            "memory/weights_mib"}));
  EXPECT_EQ(s[0].value, 2.25f);
  EXPECT_EQ(s[1].value, float(0.001));
  EXPECT_TRUE(std::isnan(s[2].value));  // null: a non-finite number in the record
  EXPECT_EQ(s[6].value, 0.5f);
  EXPECT_EQ(s[7].value, 3.0f);
}

TEST(EventFileWriter, NamesAFreshFilePerWriterAndFlushesEachRecord) {
  ff::testing::TempDir dir;
  EventFileWriter a(dir.path().string());
  EventFileWriter b(dir.path().string());  // a resumed run in the same second: its own file
  EXPECT_NE(a.path(), b.path());
  const std::string name = std::filesystem::path(a.path()).filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  const size_t header = frame_record(encode_file_version_event(0.0)).size();
  EXPECT_EQ(std::filesystem::file_size(a.path()), header);
  const std::vector<TensorBoardScalar> scalars = {{"train/loss", 1.0f}, {"perf/mfu", 0.5f}};
  a.write_scalars(5, scalars);
  // On disk while the writer is open, one whole record (the wall time's bytes vary, not the size).
  EXPECT_EQ(std::filesystem::file_size(a.path()), header + frame_record(encode_scalars_event(0.0, 5, scalars)).size());
}

TEST(EventFileWriter, UnwritableFolderIsNamed) {
  ff::testing::expect_error([] { EventFileWriter w("/nonexistent/run"); },
                                     {"TensorBoard event file", "/nonexistent/run", "tensorboard = false"});
}
