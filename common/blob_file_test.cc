// Copyright 2026 SMoE Lab authors.
#include "common/blob_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace smoe {
namespace {

namespace fs = std::filesystem;

TEST(BlobFileTest, Sha256MatchesKnownVectorsIncrementally) {
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 h;
  h.Update("a");
  h.Update("bc");
  EXPECT_EQ(h.HexDigest(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("x")));
  EXPECT_FALSE(IsSha256Hex("ABC"));
}

TEST(BlobFileTest, CopyAtomicDigestsAndSetAside) {
  const fs::path dir = fs::temp_directory_path() /
                       ("smoe-blob-file-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string src = (dir / "a").string();
  std::string data(3 * kBlobChunkBytes + 17, 'q');
  data[5] = 'z';
  std::ofstream(src, std::ios::binary) << data;
  auto d = CopyFileAtomic(src, (dir / "b").string());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->bytes, static_cast<int64_t>(data.size()));
  EXPECT_EQ(d->sha256, Sha256Hex(data));
  EXPECT_FALSE(fs::exists(dir / "b.tmp"));
  auto d2 = DigestFile((dir / "b").string());
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(d2->sha256, d->sha256);
  EXPECT_TRUE(absl::IsNotFound(DigestFile((dir / "none").string()).status()));
  auto aside = SetAsideFile((dir / "b").string());
  ASSERT_TRUE(aside.ok()) << aside.status();
  EXPECT_NE(aside->find("b.corrupt-"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "b"));
  EXPECT_TRUE(fs::exists(*aside));
  fs::remove_all(dir);
}

TEST(BlobFileTest, FileNamesAreCheckedNamingTheField) {
  EXPECT_TRUE(ValidateBlobFileName("checkpoint.smoeckpt", "f").ok());
  for (const char* bad : {"", ".hidden", "a/b", "..", "x y"}) {
    absl::Status st = ValidateBlobFileName(bad, "file_name");
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << bad;
    EXPECT_NE(st.message().find("file_name"), std::string::npos);
  }
  EXPECT_FALSE(ValidateBlobFileName(std::string(129, 'a'), "f").ok());
}

}  // namespace
}  // namespace smoe
