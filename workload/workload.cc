#include "workload/workload.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rankwire::workload {
namespace {

// splitmix64: small, fast, and fully specified, so streams are identical
// everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // [0, 1)
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  uint64_t Below(uint64_t n) { return Next() % n; }
  bool Bernoulli(double p) { return Uniform() < p; }
  // Box-Muller; one value per call keeps the stream simple.
  double Normal(double mean, double sd) {
    double u1 = std::max(Uniform(), 1e-300);
    double u2 = Uniform();
    return mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  double LogNormal(double mu, double sigma) { return std::exp(Normal(mu, sigma)); }

 private:
  uint64_t state_;
};

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Round(double v, double step) { return std::round(v / step) * step; }

constexpr const char* kQueries[] = {
    "wireless earbuds",      "running shoes men",   "air fryer",
    "phone case iphone 16",  "mechanical keyboard", "yoga mat",
    "coffee grinder",        "kids backpack",       "led desk lamp",
    "usb c charger 65w",     "down jacket women",   "stainless water bottle",
    "robot vacuum",          "4k monitor 27 inch",  "electric toothbrush",
    "camping tent 2 person", "bluetooth speaker",   "gaming mouse",
    "silk pillowcase",       "instant pot",         "noise cancelling headphones",
    "smart watch",           "baby stroller",       "hiking boots",
};
constexpr const char* kDevices[] = {"ios", "android", "web", "mini_program"};

struct Source {
  const char* name;
  double share;
  double text_match_shape;  // Exponent on a uniform: lower = better matches.
};
constexpr Source kSources[] = {
    {"text_bm25", 0.35, 0.45}, {"vector_ann", 0.30, 0.9},   {"i2i_cf", 0.15, 1.4},
    {"hot_sale", 0.10, 1.6},   {"personalized", 0.10, 1.2},
};

}  // namespace

const std::vector<std::string>& ItemFeatureNames() {
  static const auto* names = new std::vector<std::string>{
      "price",          "discount_rate",  "sales_30d",        "review_count",   "rating",
      "ctr_7d",         "cvr_7d",         "add_cart_rate_7d", "text_match",     "semantic_sim",
      "brand_affinity", "category_match", "shop_score",       "freshness_days", "stock",
      "delivery_days",  "image_quality",  "return_rate",
  };
  return *names;
}

rank::v1::RankRequest WorkloadGenerator::Make(uint64_t sequence) const {
  Rng rng(options_.seed * 0x100000001b3ull ^ (sequence + 1) * 0x9e3779b97f4a7c15ull);
  rank::v1::RankRequest req;
  req.set_request_id(absl::StrFormat("req-%x-%08d", options_.seed, sequence));
  req.set_scene(options_.scene);
  uint64_t user = rng.Below(5'000'000);
  req.set_user_id(absl::StrCat("u", user));
  req.set_request_time_ms(1'795'000'000'000 + static_cast<int64_t>(sequence) * 37);
  req.set_top_n(std::min(options_.top_n, options_.candidates));
  req.set_log_mode(options_.log_mode);
  for (const std::string& c : options_.accept_codecs) req.add_accept_codecs(c);

  auto& user_features = *req.mutable_user_features();
  const double price_pref = rng.Normal(4.8, 0.6);  // ln(price) the user tends to buy.
  user_features["user_price_pref"] = Round(price_pref, 0.001);
  user_features["user_activity"] = Round(rng.Uniform(), 0.001);
  user_features["user_purchase_power"] = Round(rng.Uniform(), 0.001);
  user_features["user_ctr_30d"] = Round(Sigmoid(rng.Normal(-3.0, 0.5)), 0.0001);
  user_features["user_age_bucket"] = static_cast<double>(1 + rng.Below(7));
  user_features["is_new_user"] = rng.Bernoulli(0.08) ? 1 : 0;

  auto& context = *req.mutable_context();
  context["query"] = kQueries[rng.Below(std::size(kQueries))];
  const char* device = kDevices[rng.Below(std::size(kDevices))];
  context["device"] = device;
  context["is_mobile"] = absl::string_view(device) == "web" ? "0" : "1";
  context["hour_of_day"] = absl::StrCat(rng.Below(24));
  context["city_tier"] = absl::StrCat(1 + rng.Below(5));

  for (const std::string& name : ItemFeatureNames()) req.add_item_feature_names(name);

  absl::flat_hash_set<uint64_t> used;
  uint32_t per_source_rank[std::size(kSources)] = {};
  req.mutable_candidates()->Reserve(static_cast<int>(options_.candidates));
  for (uint32_t i = 0; i < options_.candidates; ++i) {
    rank::v1::Candidate* c = req.add_candidates();
    uint64_t sku;
    do {
      sku = 10'000'000 + rng.Below(90'000'000);
    } while (!used.insert(sku).second);
    c->set_item_id(absl::StrCat("sku-", sku));
    double pick = rng.Uniform();
    size_t s = 0;
    while (s + 1 < std::size(kSources) && pick >= kSources[s].share) {
      pick -= kSources[s].share;
      ++s;
    }
    c->set_recall_source(kSources[s].name);
    c->set_recall_rank(++per_source_rank[s]);

    // A latent quality ties the behavioural features together.
    const double q = rng.Normal(0, 1);
    const double price =
        Round(std::max(0.5, rng.LogNormal(price_pref + rng.Normal(0, 0.4), 0.7)), 0.01);
    const double sales = std::floor(rng.LogNormal(3.0 + 0.8 * q, 1.5));
    auto* f = c->mutable_features();
    f->Reserve(static_cast<int>(ItemFeatureNames().size()));
    f->Add(static_cast<float>(price));
    f->Add(static_cast<float>(rng.Bernoulli(0.25) ? 0.0 : Round(rng.Uniform(0.05, 0.6), 0.01)));
    f->Add(static_cast<float>(sales));
    f->Add(static_cast<float>(std::floor(sales * rng.Uniform(0.3, 12.0))));
    f->Add(
        static_cast<float>(Round(std::clamp(4.3 + 0.3 * q + rng.Normal(0, 0.3), 1.0, 5.0), 0.1)));
    f->Add(static_cast<float>(Sigmoid(-3.3 + 0.5 * q + rng.Normal(0, 0.4))));
    f->Add(static_cast<float>(Sigmoid(-4.0 + 0.4 * q + rng.Normal(0, 0.5))));
    f->Add(static_cast<float>(Sigmoid(-3.0 + 0.4 * q + rng.Normal(0, 0.4))));
    f->Add(static_cast<float>(std::pow(rng.Uniform(), kSources[s].text_match_shape)));
    f->Add(static_cast<float>(std::clamp(rng.Normal(0.55, 0.2), -0.2, 1.0)));
    f->Add(static_cast<float>(std::pow(rng.Uniform(), 3.0)));
    f->Add(rng.Bernoulli(0.8) ? 1.0f : 0.0f);
    f->Add(
        static_cast<float>(Round(std::clamp(4.5 + 0.2 * q + rng.Normal(0, 0.2), 3.0, 5.0), 0.01)));
    f->Add(static_cast<float>(std::floor(std::pow(rng.Uniform(), 2.0) * 720)));
    f->Add(static_cast<float>(std::floor(rng.LogNormal(4.0, 1.5))));
    f->Add(static_cast<float>(1 + rng.Below(rng.Bernoulli(0.7) ? 3 : 10)));
    f->Add(static_cast<float>(rng.Uniform(0.3, 1.0)));
    f->Add(static_cast<float>(std::clamp(rng.Normal(0.06, 0.04), 0.0, 0.3)));
  }
  return req;
}

}  // namespace rankwire::workload
