// The TensorProto decoder and encoder (see tensor_values.h).
#include "ir/tensor_values.h"

#include <cstring>
#include <type_traits>

#include "onnxfuse/error.h"
#include "ir/tensor_data.h"

namespace onnxfuse {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "raw_data is little-endian and copied as it is");

namespace {

using onnx::TensorProto;

// Elements stored as `Stored` (raw_data) or in the typed `field`, converted to T.
template <typename Stored, typename T, typename Field>
std::vector<T> Decode(const TensorProto& tensor, const Field& field, std::int64_t count, const std::string& where) {
  std::vector<T> out;
  if (tensor.has_raw_data()) {
    const std::string& raw = tensor.raw_data();
    // count comes from checked dims, but may still be far beyond the data: compare before sizing anything.
    const auto have = static_cast<std::int64_t>(raw.size() / sizeof(Stored));
    if (count != have || raw.size() % sizeof(Stored) != 0) {
      const auto need = CheckedMultiply(count, static_cast<std::int64_t>(sizeof(Stored)));
      throw Error(ErrorKind::kInvalidModel, where + ": raw_data has " + std::to_string(raw.size()) +
                                                " bytes, dims need " + (need ? std::to_string(*need) : "over 2^63"));
    }
    if constexpr (std::is_same_v<Stored, T>) {  // little-endian bytes as they are: one copy
      out.resize(static_cast<std::size_t>(count));
      if (count > 0) std::memcpy(out.data(), raw.data(), raw.size());  // never with a null pointer
      return out;
    }
    out.reserve(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < static_cast<std::size_t>(count); ++i) {
      Stored value;
      std::memcpy(&value, raw.data() + i * sizeof(Stored), sizeof(Stored));
      out.push_back(static_cast<T>(value));
    }
    return out;
  }
  if (static_cast<std::int64_t>(field.size()) != count)
    throw Error(ErrorKind::kInvalidModel, where + ": holds " + std::to_string(field.size()) + " values, dims need " +
                                              std::to_string(count));
  for (const auto& value : field) out.push_back(static_cast<T>(value));
  return out;
}

}  // namespace

// IEEE 754 binary16 bits -> float (subnormals, infinities and NaN included).
float HalfToFloat(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// float -> binary16: the exponent rebiased, the mantissa rounded to 10 bits
// by adding half an ulp plus the kept lsb's parity (ties to even); below the
// normal range the value is shifted into a subnormal with the same rounding.
std::uint16_t FloatToHalf(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t exp = (bits >> 23) & 0xffu, mant = bits & 0x7fffffu;
  if (exp == 0xffu) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf, NaN
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow: infinity
  if (e <= 0) {  // subnormal half, or zero
    if (e < -10) return sign;
    const std::uint32_t full = mant | 0x800000u;
    const int shift = 14 - e;  // 13 bits of the mantissa, plus 1 - e for the subnormal's scale
    std::uint32_t half = full >> shift;
    const std::uint32_t rest = full & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // a carry into the exponent is right, up to inf
  return static_cast<std::uint16_t>(sign | half);
}

namespace {

template <typename T>
std::vector<T> DecodeHalves(const TensorProto& tensor, std::int64_t count, const std::string& where) {
  std::vector<T> out;
  for (std::uint16_t half : Decode<std::uint16_t, std::uint16_t>(tensor, tensor.int32_data(), count, where))
    out.push_back(static_cast<T>(HalfToFloat(half)));
  return out;
}

template <typename Stored>
void AppendLittleEndian(Stored value, std::string& bytes) {
  char buffer[sizeof(Stored)];
  std::memcpy(buffer, &value, sizeof(Stored));
  bytes.append(buffer, sizeof(Stored));
}

}  // namespace

template <typename T>
std::vector<T> DecodeTensor(const TensorProto& tensor, const std::string& where) {
  if (tensor.data_location() == TensorProto::EXTERNAL)
    throw Error(ErrorKind::kUnsupported, where + ": tensor data is stored externally");
  // Dims from a file are untrusted: negative ones and products beyond int64 are refused
  // before anything is sized from them (tensor_data.h).
  const auto count = CheckedElementCount(tensor.dims());
  if (!count) throw Error(ErrorKind::kInvalidModel, where + ": tensor dims are negative or their product overflows");
  const std::int64_t n = *count;
  switch (tensor.data_type()) {
    case TensorProto::FLOAT: return Decode<float, T>(tensor, tensor.float_data(), n, where);
    case TensorProto::DOUBLE: return Decode<double, T>(tensor, tensor.double_data(), n, where);
    case TensorProto::FLOAT16: return DecodeHalves<T>(tensor, n, where);
    case TensorProto::INT64: return Decode<std::int64_t, T>(tensor, tensor.int64_data(), n, where);
    case TensorProto::INT32: return Decode<std::int32_t, T>(tensor, tensor.int32_data(), n, where);
    case TensorProto::INT16: return Decode<std::int16_t, T>(tensor, tensor.int32_data(), n, where);
    case TensorProto::INT8: return Decode<std::int8_t, T>(tensor, tensor.int32_data(), n, where);
    case TensorProto::UINT64: return Decode<std::uint64_t, T>(tensor, tensor.uint64_data(), n, where);
    case TensorProto::UINT32: return Decode<std::uint32_t, T>(tensor, tensor.uint64_data(), n, where);
    case TensorProto::UINT16: return Decode<std::uint16_t, T>(tensor, tensor.int32_data(), n, where);
    case TensorProto::UINT8:
    case TensorProto::BOOL: return Decode<std::uint8_t, T>(tensor, tensor.int32_data(), n, where);
    default:
      throw Error(ErrorKind::kUnsupported,
                  where + ": tensor element type " + std::to_string(tensor.data_type()) + " is not supported");
  }
}

template std::vector<float> DecodeTensor<float>(const TensorProto&, const std::string&);
template std::vector<double> DecodeTensor<double>(const TensorProto&, const std::string&);
template std::vector<std::int64_t> DecodeTensor<std::int64_t>(const TensorProto&, const std::string&);

TensorProto EncodeTensor(const std::string& name, std::int32_t data_type, const std::vector<std::int64_t>& dims,
                         const std::vector<double>& values) {
  Check(data_type == TensorProto::FLOAT || data_type == TensorProto::DOUBLE || data_type == TensorProto::FLOAT16,
        "EncodeTensor: FLOAT, DOUBLE or FLOAT16 for float values");
  TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(data_type);
  for (auto d : dims) tensor.add_dims(d);
  std::string bytes;
  for (double v : values) {
    if (data_type == TensorProto::FLOAT) AppendLittleEndian(static_cast<float>(v), bytes);
    else if (data_type == TensorProto::FLOAT16) AppendLittleEndian(FloatToHalf(static_cast<float>(v)), bytes);
    else AppendLittleEndian(v, bytes);
  }
  tensor.set_raw_data(std::move(bytes));
  return tensor;
}

TensorProto EncodeIntTensor(const std::string& name, std::int32_t data_type, const std::vector<std::int64_t>& dims,
                            const std::vector<std::int64_t>& values) {
  TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(data_type);
  for (auto d : dims) tensor.add_dims(d);
  std::string bytes;
  for (std::int64_t v : values) {
    switch (data_type) {
      case TensorProto::INT64: AppendLittleEndian(v, bytes); break;
      case TensorProto::INT32: AppendLittleEndian(static_cast<std::int32_t>(v), bytes); break;
      case TensorProto::INT16: AppendLittleEndian(static_cast<std::int16_t>(v), bytes); break;
      case TensorProto::INT8: AppendLittleEndian(static_cast<std::int8_t>(v), bytes); break;
      case TensorProto::UINT64: AppendLittleEndian(static_cast<std::uint64_t>(v), bytes); break;
      case TensorProto::UINT32: AppendLittleEndian(static_cast<std::uint32_t>(v), bytes); break;
      case TensorProto::UINT16: AppendLittleEndian(static_cast<std::uint16_t>(v), bytes); break;
      case TensorProto::UINT8: AppendLittleEndian(static_cast<std::uint8_t>(v), bytes); break;
      case TensorProto::BOOL: AppendLittleEndian(static_cast<std::uint8_t>(v != 0), bytes); break;
      default: Check(false, "EncodeTensor: an integer or BOOL type for integer values");
    }
  }
  tensor.set_raw_data(std::move(bytes));
  return tensor;
}

}  // namespace onnxfuse
