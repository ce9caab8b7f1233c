// ONNX opsets 18 to 23 on Debian's libonnx 1.12, which knows opset 17.
//
// PyTorch's dynamo exporter and current tools write opset 18+: the Reduce
// ops take their axes as an input, Split has num_outputs, Pad has axes,
// Resize has new attributes, and opsets 18–23 add ops (GroupNormalization,
// Col2Im, CenterCropPad, Mish, the Bitwise ops, Gelu, AffineGrid,
// Attention, RMSNormalization, RotaryEmbedding). libonnx 1.12 checks such
// a node against its newest schema at or below the model's opset (the
// opset 13 ReduceMean refuses a second input) or has none at all.
//
// Glint registers its own schemas for those versions in libonnx's
// registry, with their inputs, outputs, attributes, type constraints and a
// type-and-shape inference function each, written from the ONNX operator
// specification (ONNX Runtime 1.30 is the reference the tests compare
// with). libonnx's checker and shape inference then treat them as their
// own. The default domain's version range is raised to
// kNewestSupportedOpset so that the registry accepts them.
//
// Thread-safe: the registration runs once per process.
#ifndef GLINT_ONNX_NEWER_OPSETS_H_
#define GLINT_ONNX_NEWER_OPSETS_H_

#include <cstdint>

namespace glint::onnx_internal {

// The newest opset of the default domain Glint has schemas for.
inline constexpr int64_t kNewestSupportedOpset = 23;

// Registers the schemas (once; later calls return at once). Call before
// libonnx's checker or shape inference runs.
void RegisterNewerOpsetSchemas();

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_NEWER_OPSETS_H_
