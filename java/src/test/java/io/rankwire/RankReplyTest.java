package io.rankwire;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import com.google.protobuf.ByteString;
import org.junit.Test;
import rank.v1.Rank.RankResponse;
import rank.v1.Rank.ResponseHeader;

/** The envelope: read in place, its header parsed only when asked for. */
public class RankReplyTest {
  static final ByteString PAYLOAD = RankbinViewTest.hex(RankbinViewTest.WORKED_EXAMPLE);

  static ByteString response(ResponseHeader header) {
    return RankResponse.newBuilder().setHeader(header).setPayload(PAYLOAD).build()
        .toByteString();
  }

  @Test
  public void opensTheBodyAndParsesTheHeaderWhenAsked() {
    ResponseHeader h = ResponseHeader.newBuilder().setRequestId("r-1").setCodec("rankbin")
        .setItemCount(2).setModelVersion("m@1").build();
    RankReply reply = RankReply.open(response(h), Limits.DEFAULT);
    assertEquals("rankbin", reply.codec());
    assertEquals("sku-2", reply.view().item(1).id());
    assertEquals(h, reply.header());
    assertEquals(PAYLOAD.size(), reply.bodyBytes());
  }

  @Test
  public void aHeaderThatDoesNotParseFailsOnlyWhenRead() {
    // request_id (field 1) holding bytes that are not UTF-8: proto3 refuses the header.
    ByteString header = ByteString.copyFrom(new byte[] {0x0a, 1, (byte) 0xff})
        .concat(ResponseHeader.newBuilder().setCodec("rankbin").setItemCount(2).build()
            .toByteString());
    ByteString response = ByteString.copyFrom(new byte[] {0x0a, (byte) header.size()})
        .concat(header).concat(RankResponse.newBuilder().setPayload(PAYLOAD).build()
            .toByteString());
    RankReply reply = RankReply.open(response, Limits.DEFAULT);
    assertEquals(2, reply.view().size());
    FormatException e = assertThrows(FormatException.class, reply::header);
    assertTrue(e.getMessage(), e.getMessage().contains("ResponseHeader"));
  }

  @Test
  public void aRepeatedHeaderMerges() {
    ByteString response = response(ResponseHeader.newBuilder().setCodec("rankbin").build())
        .concat(RankResponse.newBuilder().setHeader(ResponseHeader.newBuilder()
            .setItemCount(2).setRequestId("r-2")).build().toByteString());
    RankReply reply = RankReply.open(response, Limits.DEFAULT);
    assertEquals("rankbin", reply.header().getCodec());
    assertEquals("r-2", reply.header().getRequestId());
    assertEquals(2, reply.header().getItemCount());
  }

  @Test
  public void theHeaderMustMatchTheBody() {
    assertThrows(UnknownCodecException.class, () -> RankReply.open(response(
        ResponseHeader.newBuilder().setCodec("rankbin-v9").setItemCount(2).build()),
        Limits.DEFAULT));
    assertThrows(FormatException.class, () -> RankReply.open(response(
        ResponseHeader.newBuilder().setCodec("rankbin").setItemCount(3).build()),
        Limits.DEFAULT));
    assertThrows(FormatException.class, () -> RankReply.open(response(
        ResponseHeader.newBuilder().setCodec("protobuf").setItemCount(2).build()),
        Limits.DEFAULT));
  }
}
