#include "core/digest.h"

#include <string>

#include "gtest/gtest.h"

namespace glint {
namespace {

TEST(DigestTest, Sha256MatchesTheStandardVectors) {
  // FIPS 180-2, appendix B.1, and the empty message.
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(DigestTest, PiecesDigestAsTheirConcatenation) {
  const std::string whole(100'000, 'x');
  const absl::string_view view(whole);
  EXPECT_EQ(Sha256OfPieces({view.substr(0, 3), view.substr(3, 70'000),
                            absl::string_view(), view.substr(70'003)}),
            Sha256(whole));
  EXPECT_EQ(Sha256OfPieces({"a", "bc"}), Sha256("abc"));
  EXPECT_EQ(Sha256OfPieces({}), Sha256(""));
}

}  // namespace
}  // namespace glint
