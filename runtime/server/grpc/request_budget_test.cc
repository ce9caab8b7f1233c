#include "runtime/server/grpc/request_budget.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace glint {
namespace {

TEST(RequestBudgetTest, ChargesUpToTheLimitAndRefusesBeyond) {
  RequestBudget budget(100);
  auto a = budget.TryCharge(60);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = budget.TryCharge(40);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(budget.charged(), 100);
  auto c = budget.TryCharge(1);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("--max_request_bytes_in_flight=100"),
            absl::string_view::npos)
      << c.status();
  EXPECT_EQ(budget.refused(), 1);
  // Releasing a charge makes room again.
  a->reset();
  EXPECT_EQ(budget.charged(), 40);
  auto d = budget.TryCharge(60);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(budget.charged(), 100);
}

TEST(RequestBudgetTest, OneRequestLargerThanTheBudgetPassesAlone) {
  RequestBudget budget(100);
  auto big = budget.TryCharge(250);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(budget.charged(), 250);
  auto small = budget.TryCharge(1);
  EXPECT_EQ(small.status().code(), absl::StatusCode::kResourceExhausted);
  big->reset();
  EXPECT_EQ(budget.charged(), 0);
}

TEST(RequestBudgetTest, ConcurrentChargesNeverPassTheLimit) {
  static constexpr int64_t kLimit = 1000;
  RequestBudget budget(kLimit);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&budget] {
      for (int i = 0; i < 20000; ++i) {
        auto charge = budget.TryCharge(300);
        if (charge.ok()) {
          // Three charges fit, a fourth never does.
          EXPECT_LE(budget.charged(), kLimit);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(budget.charged(), 0);
}

}  // namespace
}  // namespace glint
