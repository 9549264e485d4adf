// TLS and mutual TLS: the real server with certificates made by openssl at
// run time (tests/support/test_certs.h), called through the real client.
#include <grpcpp/generic/generic_stub.h>

#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "client/rank_client.h"
#include "client/tls.h"
#include "codec/builtin_codecs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/server_process.h"
#include "tests/support/test_certs.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

using test::ServerProcess;
using ::testing::HasSubstr;

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<CodecRegistry> codecs = MakeBuiltinCodecs({});
    ASSERT_TRUE(codecs.ok()) << codecs.status();
    codecs_ = std::make_unique<CodecRegistry>(*std::move(codecs));
    absl::StatusOr<std::unique_ptr<test::TestCerts>> certs = test::TestCerts::Make();
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *std::move(certs);
  }

  std::unique_ptr<ServerProcess> Start(bool mutual, std::vector<std::string> more = {}) {
    std::vector<std::string> flags = {"--tls_cert_file=" + certs_->server_cert(),
                                      "--tls_key_file=" + certs_->server_key(), "--log_mode=none"};
    if (mutual) flags.push_back("--tls_client_ca_file=" + certs_->ca());
    flags.insert(flags.end(), more.begin(), more.end());
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(flags);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  // One Rank call with `files`' credentials (plaintext when null).
  absl::Status Call(const ServerProcess& server, const client::ClientTlsFiles* files) {
    client::ChannelOptions channel_options;
    if (files != nullptr) {
      absl::StatusOr<client::ClientSecurity> made = client::MakeClientSecurity(*files);
      if (!made.ok()) return made.status();
      channel_options.credentials = std::move(made->credentials);
      channel_options.ssl_target_name = std::move(made->server_name);
    }
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        client::MakeChannel(server.target(), channel_options);
    if (!channel.ok()) return channel.status();
    client::RankClient client(*std::move(channel), codecs_.get());
    client::CallOptions call;
    call.deadline = absl::Seconds(5);
    workload::WorkloadOptions options;
    options.candidates = 50;
    return client.Rank(workload::WorkloadGenerator(options).Make(0), call).status();
  }

  std::unique_ptr<CodecRegistry> codecs_;
  std::unique_ptr<test::TestCerts> certs_;
};

TEST_F(TlsTest, TlsWorksAndPlaintextIsRefused) {
  auto server = Start(false);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Output(), HasSubstr("tls=tls"));
  const client::ClientTlsFiles tls{certs_->ca(), "", "", ""};
  absl::Status ok = Call(*server, &tls);
  EXPECT_TRUE(ok.ok()) << ok;
  // The certificate names localhost; a client that dials an address and
  // checks another name uses --tls_server_name.
  const client::ClientTlsFiles named{certs_->ca(), "", "", "localhost"};
  EXPECT_TRUE(Call(*server, &named).ok());
  const client::ClientTlsFiles wrong_name{certs_->ca(), "", "", "not-the-server.example"};
  EXPECT_EQ(Call(*server, &wrong_name).code(), absl::StatusCode::kUnavailable);
  // A client that does not trust the server's CA is refused...
  const client::ClientTlsFiles other_ca{certs_->other_ca(), "", "", ""};
  EXPECT_EQ(Call(*server, &other_ca).code(), absl::StatusCode::kUnavailable);
  // ...and so is a plaintext client.
  absl::Status plain = Call(*server, nullptr);
  EXPECT_EQ(plain.code(), absl::StatusCode::kUnavailable) << plain;
  // The metrics endpoint stays plain HTTP on its own port.
  absl::StatusOr<std::string> metrics = test::HttpGet(server->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(*metrics, HasSubstr("rankwire_rank_rpcs_total{outcome=\"ok\"} 2\n"));
}

TEST_F(TlsTest, MutualTlsRequiresAClientCertificateFromTheTrustedCa) {
  auto server = Start(true);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Output(), HasSubstr("tls=mutual"));
  const client::ClientTlsFiles with_cert{certs_->ca(), certs_->client_cert(), certs_->client_key(),
                                         ""};
  absl::Status ok = Call(*server, &with_cert);
  EXPECT_TRUE(ok.ok()) << ok;
  const client::ClientTlsFiles no_cert{certs_->ca(), "", "", ""};
  EXPECT_EQ(Call(*server, &no_cert).code(), absl::StatusCode::kUnavailable);
  const client::ClientTlsFiles foreign_cert{certs_->ca(), certs_->other_client_cert(),
                                            certs_->other_client_key(), ""};
  EXPECT_EQ(Call(*server, &foreign_cert).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Call(*server, nullptr).code(), absl::StatusCode::kUnavailable);
}

// kubelet's gRPC probes cannot speak TLS: --health_port answers
// grpc.health.v1.Health in plaintext and serves nothing else.
TEST_F(TlsTest, ThePlaintextHealthPortServesOnlyHealth) {
  auto server = Start(true, {"--health_port=0"});
  ASSERT_NE(server, nullptr);
  std::smatch m;
  const std::string output = server->Output();
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(health_port=(\d+))"))) << output;
  auto channel = client::MakeChannel(absl::StrCat("127.0.0.1:", m[1].str()));
  grpc::GenericStub stub(channel);
  auto call = [&](const std::string& method, std::string* out) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::ByteBuffer request, response;
    grpc::Slice empty("", 0);
    request = grpc::ByteBuffer(&empty, 1);
    absl::Notification done;
    grpc::Status status;
    stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
      status = std::move(s);
      done.Notify();
    });
    done.WaitForNotification();
    if (status.ok()) {
      grpc::Slice slice;
      response.DumpToSingleSlice(&slice);
      out->assign(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    return status;
  };
  std::string health;
  grpc::Status s = call("/grpc.health.v1.Health/Check", &health);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(health, std::string("\x08\x01", 2));  // status: SERVING
  std::string ignored;
  EXPECT_EQ(call("/rank.v1.RankService/Rank", &ignored).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(TlsTest, InconsistentFlagsFailWithAMessage) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({"--tls_cert_file=" + certs_->server_cert()});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()),
              HasSubstr("--tls_cert_file needs --tls_key_file"));
  server = ServerProcess::Start({"--tls_cert_file=/nonexistent.pem", "--tls_key_file=/x.key"});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("/nonexistent.pem"));
  EXPECT_EQ(client::MakeClientSecurity({"", certs_->client_cert(), certs_->client_key(), ""})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rankwire
