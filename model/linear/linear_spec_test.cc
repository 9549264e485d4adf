#include "model/linear/linear_spec.h"

#include <cmath>
#include <string>

#include "base/status_reason.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

constexpr char kSmall[] = R"(# a comment
rankwire-model 1
name tiny
version 7
transform price log1p
transform rating scale 5
transform ctr clip 0 0.5
head ctr -1.5 1.0
head rel 0.0 0.5   # trailing comment
weight ctr ctr 4.0
weight ctr price*user.pref -0.25
weight rel rating~ctx.quality 2
explain ctr
boost hot 1.5
experiment a 30
experiment b 70
end
)";

TEST(LinearModelTest, ShippedModelLoads) {
  absl::StatusOr<LinearSpec> model = LinearSpec::LoadFile(RANKWIRE_MODEL_PATH);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->full_version(), "ecom_search_lr@2026.11.3");
  ASSERT_EQ(model->heads().size(), 3u);
  EXPECT_EQ(model->heads()[0].name, "ctr");
  EXPECT_TRUE(model->heads()[0].explain);
  EXPECT_FALSE(model->heads()[2].explain);
  EXPECT_EQ(model->heads()[0].terms.size(), 11u);
}

TEST(LinearModelTest, ParsesEveryDirective) {
  absl::StatusOr<LinearSpec> model = LinearSpec::Parse(kSmall, "tiny.model");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->full_version(), "tiny@7");
  ASSERT_EQ(model->heads().size(), 2u);
  const LinearSpec::Head& ctr = model->heads()[0];
  EXPECT_DOUBLE_EQ(ctr.bias, -1.5);
  ASSERT_EQ(ctr.terms.size(), 2u);
  EXPECT_EQ(ctr.terms[1].input, "price*user.pref");
  EXPECT_EQ(ctr.terms[1].op, LinearSpec::Op::kProduct);
  const LinearSpec::Atom& price = model->atoms()[ctr.terms[1].lhs];
  EXPECT_EQ(price.source, LinearSpec::Source::kItem);
  EXPECT_EQ(price.transform, LinearSpec::TransformKind::kLog1p);
  const LinearSpec::Atom& pref = model->atoms()[ctr.terms[1].rhs];
  EXPECT_EQ(pref.source, LinearSpec::Source::kUser);
  EXPECT_EQ(pref.name, "pref");
  const LinearSpec::Term& rel = model->heads()[1].terms[0];
  EXPECT_EQ(rel.op, LinearSpec::Op::kAbsDiff);
  EXPECT_EQ(model->atoms()[rel.rhs].source, LinearSpec::Source::kContext);
  EXPECT_DOUBLE_EQ(model->Boost("hot"), 1.5);
  EXPECT_DOUBLE_EQ(model->Boost("unlisted"), 1.0);
}

TEST(LinearModelTest, TransformsApply) {
  LinearSpec::Atom atom;
  atom.transform = LinearSpec::TransformKind::kLog1p;
  EXPECT_DOUBLE_EQ(LinearSpec::ApplyTransform(atom, std::exp(2.0) - 1), 2.0);
  EXPECT_DOUBLE_EQ(LinearSpec::ApplyTransform(atom, -5), 0.0);  // Negative counts clamp.
  atom.transform = LinearSpec::TransformKind::kClip;
  atom.a = 0;
  atom.b = 0.5;
  EXPECT_DOUBLE_EQ(LinearSpec::ApplyTransform(atom, 0.9), 0.5);
  EXPECT_DOUBLE_EQ(LinearSpec::ApplyTransform(atom, -1), 0.0);
  atom.transform = LinearSpec::TransformKind::kScale;
  atom.a = 4;
  EXPECT_DOUBLE_EQ(LinearSpec::ApplyTransform(atom, 2), 0.5);
}

TEST(LinearModelTest, BucketsAreStableAndFollowThePercents) {
  absl::StatusOr<LinearSpec> model = LinearSpec::Parse(kSmall, "tiny.model");
  ASSERT_TRUE(model.ok()) << model.status();
  int a = 0;
  for (int u = 0; u < 10000; ++u) {
    const std::string user = "u" + std::to_string(u);
    const std::string& bucket = model->BucketOf(user);
    EXPECT_EQ(&bucket, &model->BucketOf(user));
    if (bucket == "a") ++a;
  }
  EXPECT_NEAR(a, 3000, 300);
}

TEST(LinearModelTest, ErrorsNameTheFileAndLine) {
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"", "empty model file"},
      {"rankwire-model 2\n", "x.model:1: expected the header"},
      {"rankwire-model 1\nname n\nversion v\nhead h 0 1\nfrobnicate\nend\n",
       "x.model:5: unknown directive \"frobnicate\""},
      {"rankwire-model 1\nname n\nversion v\nhead h zero 1\nend\n",
       "x.model:4: \"zero\" is not a finite number"},
      {"rankwire-model 1\nname n\nversion v\nhead h 0 1\nweight g x 1\nend\n",
       "x.model:5: weight for undeclared head \"g\""},
      {"rankwire-model 1\nname n\nversion v\nhead h 0 1\nexperiment a 60\nexperiment b 30\nend\n",
       "experiment percents sum to 90"},
      {"rankwire-model 1\nname n\nhead h 0 1\nend\n", "model needs a name and a version"},
      {"rankwire-model 1\nname n\nversion v\nend\n", "model has no heads"},
      {"rankwire-model 1\nname n\nversion v\nhead h 0 1\ntransform x log1p\nend\n",
       "x.model:5: transforms must come before heads"},
      {"rankwire-model 1\nname n\nversion v\ntransform x clip 2 1\nend\n",
       "clip bounds are reversed"},
      {"rankwire-model 1\nname n\nversion v\nhead h 0 1\nweight h x 1\nweight h x 2\nend\n",
       "input \"x\" weighted twice"},
      {"rankwire-model 1\nname n\nversion v\nhead h 0 1\nweight h x nan\nend\n",
       "\"nan\" is not a finite number"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<LinearSpec> model = LinearSpec::Parse(c.text, "x.model");
    ASSERT_FALSE(model.ok()) << c.text;
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(model.status().message()), HasSubstr(c.message)) << c.text;
  }
  EXPECT_EQ(LinearSpec::LoadFile("/no/such/model").status().code(), absl::StatusCode::kNotFound);
}

// What a reload counts a refused model as (base/status_reason.h).
TEST(LinearModelTest, ErrorsCarryTheReasonAReloadCounts) {
  struct Case {
    std::string text;
    std::string reason;
  };
  const Case cases[] = {
      {"", "empty"},
      {"# only a comment\n", "empty"},
      // Cut at a line boundary: every line parses, but the end is missing.
      {"rankwire-model 1\nname n\nversion v\nhead h 0 1\nweight h x 1\n", "truncated"},
      {"rankwire-model 1\nname n\nversion v\nhead h 0 1\nweight h x inf\nend\n", "invalid_number"},
      {"rankwire-model 1\nname n\nversion v\ntransform x sqrt\nhead h 0 1\nend\n",
       "unknown_transform"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<LinearSpec> model = LinearSpec::Parse(c.text, "x.model");
    ASSERT_FALSE(model.ok()) << c.text;
    EXPECT_EQ(ReasonOf(model.status()).value_or("none"), c.reason) << model.status();
  }
  absl::StatusOr<LinearSpec> after = LinearSpec::Parse(
      "rankwire-model 1\nname n\nversion v\nhead h 0 1\nend\nhead g 0 1\n", "x.model");
  EXPECT_THAT(std::string(after.status().message()), HasSubstr("x.model:6: a directive after"));
}

}  // namespace
}  // namespace rankwire
