#include "server/admission.h"

#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

TEST(AdmissionTest, RefusesPastTheSlotsAndAdmitsAgainWhenOneIsFreed) {
  AdmissionControl admission(AdmissionOptions{2, 1 << 20, 1 << 20});
  AdmissionControl::Refusal refusal;
  std::optional<AdmissionControl::Slot> a, b, c;
  ASSERT_TRUE(admission.Admit("p", &a, &refusal).ok());
  ASSERT_TRUE(admission.Admit("p", &b, &refusal).ok());
  absl::Status s = admission.Admit("q", &c, &refusal);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("maximum of 2 calls (--max_concurrent_rank)"));
  EXPECT_EQ(refusal, AdmissionControl::Refusal::kOverload);
  EXPECT_FALSE(c.has_value());
  EXPECT_EQ(admission.in_use(), 2);
  a.reset();
  EXPECT_EQ(admission.in_use(), 1);
  EXPECT_TRUE(admission.Admit("q", &c, &refusal).ok());
}

TEST(AdmissionTest, ASlotReleasedEarlyIsFreedOnce) {
  AdmissionControl admission(AdmissionOptions{2, 1 << 20, 1 << 20});
  AdmissionControl::Refusal refusal;
  std::optional<AdmissionControl::Slot> a, b;
  ASSERT_TRUE(admission.Admit("p", &a, &refusal).ok());
  ASSERT_TRUE(admission.Admit("p", &b, &refusal).ok());
  a->Release();
  EXPECT_EQ(admission.in_use(), 1);
  a->Release();
  a.reset();
  EXPECT_EQ(admission.in_use(), 1) << "neither a second Release nor the destructor frees again";
  AdmissionControl::Slot moved = *std::move(b);
  b.reset();
  EXPECT_EQ(admission.in_use(), 1) << "a moved-from slot frees nothing";
  moved.Release();
  EXPECT_EQ(admission.in_use(), 0);
}

TEST(AdmissionTest, APeerThatDoesNotReadIsRefusedAndOthersAreNot) {
  AdmissionControl admission(AdmissionOptions{8, 1000, 100});
  AdmissionControl::Refusal refusal;
  admission.AddUnsent("slow", 100);
  std::optional<AdmissionControl::Slot> slot;
  absl::Status s = admission.Admit("slow", &slot, &refusal);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refusal, AdmissionControl::Refusal::kUnsentBytes);
  EXPECT_THAT(std::string(s.message()), HasSubstr("has not read 100 bytes"));
  EXPECT_TRUE(admission.Admit("fast", &slot, &refusal).ok());
  slot.reset();
  admission.RemoveUnsent("slow", 60);
  EXPECT_TRUE(admission.Admit("slow", &slot, &refusal).ok());
  EXPECT_EQ(admission.unsent_bytes(), 40u);
}

TEST(AdmissionTest, TheGlobalUnsentBoundRefusesEveryone) {
  AdmissionControl admission(AdmissionOptions{8, 1000, 800});
  AdmissionControl::Refusal refusal;
  for (int i = 0; i < 10; ++i) admission.AddUnsent(absl::StrCat("peer", i), 100);
  std::optional<AdmissionControl::Slot> slot;
  EXPECT_EQ(admission.Admit("new", &slot, &refusal).code(), absl::StatusCode::kResourceExhausted);
  admission.RemoveUnsent("peer0", 100);
  EXPECT_TRUE(admission.Admit("new", &slot, &refusal).ok());
}

// Many threads admitting, releasing and counting unsent bytes at once (run
// under ThreadSanitizer by scripts/tsan.sh): the counts come back to zero.
TEST(AdmissionTest, ConcurrentCallersLeaveNothingCounted) {
  AdmissionControl admission(AdmissionOptions{4, 1 << 20, 1 << 16});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&admission, t] {
      const std::string peer = absl::StrCat("peer", t % 2);
      for (int i = 0; i < 2000; ++i) {
        AdmissionControl::Refusal refusal;
        std::optional<AdmissionControl::Slot> slot;
        if (!admission.Admit(peer, &slot, &refusal).ok()) continue;
        admission.AddUnsent(peer, 10);
        (void)admission.in_use();
        (void)admission.unsent_bytes();
        slot.reset();
        admission.RemoveUnsent(peer, 10);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admission.in_use(), 0);
  EXPECT_EQ(admission.unsent_bytes(), 0u);
}

}  // namespace
}  // namespace rankwire
