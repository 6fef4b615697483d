// The plan payload parsed in place (see plan_payload.h).
#include "backend/plan/plan_payload.h"

#include <climits>
#include <cstdint>
#include <functional>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "backend/plan/plan_format.h"

namespace onnxfuse::planformat {

namespace {

using google::protobuf::internal::WireFormatLite;

const char* const kNotParsed = "the plan payload does not parse";

// Walks the fields of the message encoded in `bytes` (protobuf's wire format:
// tag, then a varint, fixed or length-delimited value). A length-delimited
// field that `take` accepts is handed over as a view of its body; every other
// field's encoding is appended to `rest`, for the caller to parse as the
// message. False when `bytes` is not a message.
bool SplitFields(std::string_view bytes, const std::function<bool(int field, std::string_view body)>& take,
                 std::string& rest) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  for (;;) {
    const int start = in.CurrentPosition();
    const std::uint32_t tag = in.ReadTag();
    if (tag == 0) return static_cast<std::size_t>(start) == bytes.size();  // the end, or a malformed tag
    if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      std::uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return false;
      const auto body = static_cast<std::size_t>(in.CurrentPosition());
      if (length > bytes.size() - body || !in.Skip(static_cast<int>(length))) return false;
      if (take(WireFormatLite::GetTagFieldNumber(tag), bytes.substr(body, length))) continue;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
    rest.append(bytes.data() + start, static_cast<std::size_t>(in.CurrentPosition() - start));
  }
}

PayloadConstant ConstantInPlace(std::string_view body, const std::string& source) {
  PayloadConstant constant;
  std::string rest;
  const bool split = SplitFields(
      body,
      [&](int field, std::string_view data) {
        if (field != planfile::PackedConstant::kDataFieldNumber) return false;
        constant.data = data;
        return true;
      },
      rest);
  if (!split || !constant.head.ParseFromString(rest)) Invalid(source, kNotParsed);
  return constant;
}

}  // namespace

PayloadView ParsePayloadInPlace(const void* data, std::size_t size, const std::string& source) {
  PayloadView view;
  if (size > static_cast<std::size_t>(INT_MAX)) Invalid(source, "plan payload over 2 GB");  // protobuf's limit
  std::string rest;
  const bool split = SplitFields(
      std::string_view(static_cast<const char*>(data), size),
      [&](int field, std::string_view body) {
        if (field == planfile::Plan::kModelFieldNumber) {
          view.model = body;
          return true;
        }
        if (field != planfile::Plan::kConstantsFieldNumber) return false;
        view.constants.push_back(ConstantInPlace(body, source));
        return true;
      },
      rest);
  if (!split || !view.plan.ParseFromString(rest)) Invalid(source, kNotParsed);
  return view;
}

}  // namespace onnxfuse::planformat
