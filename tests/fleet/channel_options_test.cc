// ChannelOptions -> service config: the defaults central-control relies on
// (round_robin, UNAVAILABLE-only retries of the idempotent methods, health
// checking of rank.v1.RankService) and the options MakeChannel refuses.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <string>

#include "client/rank_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rankwire::client {
namespace {

using ::google::protobuf::Struct;
using ::google::protobuf::Value;
using ::testing::HasSubstr;

Struct Parse(const std::string& json) {
  Struct s;
  auto status = google::protobuf::util::JsonStringToMessage(json, &s);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return s;
}

const Value& Field(const Struct& s, const std::string& name) {
  static const Value kMissing;
  auto it = s.fields().find(name);
  return it == s.fields().end() ? kMissing : it->second;
}

TEST(ChannelOptionsTest, DefaultsBalanceRetryUnavailableAndCheckHealth) {
  Struct config = Parse(ServiceConfigJson(ChannelOptions{}));

  const Value& lb = Field(config, "loadBalancingConfig");
  ASSERT_EQ(lb.list_value().values_size(), 1);
  EXPECT_TRUE(lb.list_value().values(0).struct_value().fields().contains("round_robin"));

  EXPECT_EQ(Field(Field(config, "healthCheckConfig").struct_value(), "serviceName").string_value(),
            "rank.v1.RankService");

  const Value& methods = Field(config, "methodConfig");
  ASSERT_EQ(methods.list_value().values_size(), 1);
  const Struct& method = methods.list_value().values(0).struct_value();
  std::vector<std::string> names;
  for (const Value& n : Field(method, "name").list_value().values()) {
    names.push_back(Field(n.struct_value(), "service").string_value() + "/" +
                    Field(n.struct_value(), "method").string_value());
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("rank.v1.RankService/Rank",
                                                     "rank.v1.LogService/FetchLogs"));
  const Struct& retry = Field(method, "retryPolicy").struct_value();
  EXPECT_EQ(Field(retry, "maxAttempts").number_value(), ChannelOptions{}.max_attempts);
  // UNAVAILABLE only: RESOURCE_EXHAUSTED is load shedding and must not be
  // multiplied by retries.
  const Value& codes = Field(retry, "retryableStatusCodes");
  ASSERT_EQ(codes.list_value().values_size(), 1);
  EXPECT_EQ(codes.list_value().values(0).string_value(), "UNAVAILABLE");

  EXPECT_TRUE(MakeChannel("ipv4:127.0.0.1:1,127.0.0.1:2", ChannelOptions{}).ok());
  EXPECT_TRUE(MakeChannel("dns:///localhost:1", ChannelOptions{}).ok());
}

TEST(ChannelOptionsTest, FieldsTurnPartsOff) {
  ChannelOptions options;
  options.lb_policy = "pick_first";
  options.max_attempts = 1;
  options.health_service.clear();
  Struct config = Parse(ServiceConfigJson(options));
  EXPECT_TRUE(Field(config, "loadBalancingConfig")
                  .list_value()
                  .values(0)
                  .struct_value()
                  .fields()
                  .contains("pick_first"));
  EXPECT_FALSE(config.fields().contains("methodConfig"));
  EXPECT_FALSE(config.fields().contains("healthCheckConfig"));
  EXPECT_TRUE(MakeChannel("127.0.0.1:1", options).ok());
}

TEST(ChannelOptionsTest, ExplicitServiceConfigIsUsedAsIs) {
  ChannelOptions options;
  options.service_config = R"({"loadBalancingConfig":[{"pick_first":{}}]})";
  options.lb_policy = "ignored because the config is explicit";
  EXPECT_EQ(ServiceConfigJson(options), options.service_config);
  EXPECT_TRUE(MakeChannel("127.0.0.1:1", options).ok());
}

TEST(ChannelOptionsTest, BadOptionsAreRefusedWithTheReason) {
  ChannelOptions lb;
  lb.lb_policy = "random";
  EXPECT_THAT(MakeChannel("127.0.0.1:1", lb).status().message(), HasSubstr("random"));

  for (int attempts : {0, 6, -1}) {
    ChannelOptions a;
    a.max_attempts = attempts;
    absl::Status s = MakeChannel("127.0.0.1:1", a).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << attempts;
    EXPECT_THAT(s.message(), HasSubstr("attempts"));
  }

  ChannelOptions quote;
  quote.health_service = "x\",\"y";
  EXPECT_EQ(MakeChannel("127.0.0.1:1", quote).status().code(), absl::StatusCode::kInvalidArgument);

  ChannelOptions json;
  json.service_config = "{not json";
  EXPECT_THAT(MakeChannel("127.0.0.1:1", json).status().message(), HasSubstr("service config"));

  ChannelOptions bad_policy;
  bad_policy.service_config = R"({"loadBalancingConfig":[{"no_such_policy":{}}]})";
  EXPECT_EQ(MakeChannel("127.0.0.1:1", bad_policy).status().code(),
            absl::StatusCode::kInvalidArgument);

  ChannelOptions creds;
  creds.credentials = nullptr;
  EXPECT_THAT(MakeChannel("127.0.0.1:1", creds).status().message(), HasSubstr("credentials"));
}

}  // namespace
}  // namespace rankwire::client
