#include "gemm.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace replay::cuda {
namespace {

bool env_flag(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && (std::strcmp(value, "1") == 0 || std::strcmp(value, "true") == 0 ||
                                std::strcmp(value, "TRUE") == 0 || std::strcmp(value, "ON") == 0);
}

bool is_float_type(DType t) {
    return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16 ||
           t == DType::Float64;
}

// PyTorch's _getAlignment: the largest power of two up to 256 that divides the address.
std::uint32_t alignment_of(const void* pointer) {
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    std::uint32_t alignment = 256;
    while (alignment > 1 && address % alignment != 0) alignment /= 2;
    return alignment;
}

const char* op_char(bool transposed) {
    return transposed ? "t" : "n";
}
cublasOperation_t op(bool transposed) {
    return transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
}

std::size_t cublas_workspace_bytes(int compute_major) {
    const bool hopper_or_later = compute_major == 9 || compute_major == 10 || compute_major == 12;
    const std::size_t default_bytes = hopper_or_later
                                          ? std::size_t{4096} * 8 * 1024
                                          : std::size_t{4096} * 1024 * 2 + 16 * 1024 * 8;
    const char* config = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    if (config == nullptr) return default_bytes;
    std::size_t total = 0;
    bool any = false;
    for (const char* p = config; *p != '\0';) {
        char* end = nullptr;
        if (*p != ':') return default_bytes;  // PyTorch warns and takes its default
        const unsigned long long size = std::strtoull(p + 1, &end, 10);
        if (end == p + 1 || *end != ':') return default_bytes;
        const char* count_at = end + 1;
        const unsigned long long count = std::strtoull(count_at, &end, 10);
        if (end == count_at) return default_bytes;
        total += static_cast<std::size_t>(size) * 1024 * static_cast<std::size_t>(count);
        any = true;
        p = end;
    }
    return any ? total : default_bytes;
}

}  // namespace

BlasWorkspaces blas_workspaces_from_environment(int compute_major) {
    BlasWorkspaces w;
    w.cublas = cublas_workspace_bytes(compute_major);
    // PyTorch's cuBLASLt workspace is its own, 1 MiB unless CUBLASLT_WORKSPACE_SIZE (KiB) says
    // otherwise (parseCUDABlasLtWorkspaceSize, #73328). Measured on an H200 with PyTorch 2.11:
    // its fp32 addmm kernels are those of a 1 or 4 MiB workspace and change at 32 MiB, where
    // cuBLASLt's heuristic turns to split-K (BERT-base fp32: 23% of the GEMM time named as
    // recorded with 32 MiB, 100% with 1 MiB). Newer PyTorch may share the cuBLAS workspace
    // (TORCH_CUBLASLT_UNIFIED_WORKSPACE=1 here does the same).
    w.lt = std::size_t{1} << 20;
    if (env_flag("TORCH_CUBLASLT_UNIFIED_WORKSPACE")) w.lt = w.cublas;
    if (const char* kib = std::getenv("CUBLASLT_WORKSPACE_SIZE"); kib != nullptr) {
        char* end = nullptr;
        const long long value = std::strtoll(kib, &end, 10);
        if (end != kib && value >= 0) w.lt = static_cast<std::size_t>(value) * 1024;
    }
    return w;
}

BlasContext blas_options_from_environment(int compute_major) {
    BlasContext context;
    const BlasWorkspaces w = blas_workspaces_from_environment(compute_major);
    context.workspace_bytes = w.cublas;
    context.lt_workspace_bytes = w.lt;
    context.prefer_lt = env_flag("TORCH_BLAS_PREFER_CUBLASLT");
    context.allow_tf32 = env_flag("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE");
    return context;
}

std::optional<cudaDataType_t> cuda_data_type(DType dtype) {
    switch (dtype) {
        case DType::Float32:
            return CUDA_R_32F;
        case DType::Float16:
            return CUDA_R_16F;
        case DType::BFloat16:
            return CUDA_R_16BF;
        case DType::Float64:
            return CUDA_R_64F;
        default:
            return std::nullopt;
    }
}

std::optional<FillType> fill_type(DType dtype) {
    switch (dtype) {
        case DType::Float32:
            return FillType::Float32;
        case DType::Float16:
            return FillType::Float16;
        case DType::BFloat16:
            return FillType::BFloat16;
        case DType::Float64:
            return FillType::Float64;
        default:
            return std::nullopt;
    }
}

std::optional<std::string> normalize_gemm(GemmRecipe& g) {
    if (g.batch < 1) g.batch = 1;
    if (g.m <= 0 || g.n <= 0) return std::string("empty GEMM (m or n is 0)");
    if (g.k <= 0) return std::string("GEMM with k = 0 (no cuBLAS call to replay)");
    if (g.b_type == DType::Unknown) g.b_type = g.a_type;
    if (g.c_type == DType::Unknown) g.c_type = g.a_type;
    if (!is_float_type(g.a_type))
        return std::string("GEMM dtype ") + to_string(g.a_type) + " is not replayed by cuBLAS";
    if (g.b_type != g.a_type)
        return std::string("mixed GEMM input dtypes ") + to_string(g.a_type) + " x " +
               to_string(g.b_type);
    const bool half_to_float =
        (g.a_type == DType::Float16 || g.a_type == DType::BFloat16) && g.c_type == DType::Float32;
    if (g.c_type != g.a_type && !half_to_float)
        return std::string("GEMM output dtype ") + to_string(g.c_type) + " with inputs " +
               to_string(g.a_type);
    if (g.bias) {
        if (g.bias_type == DType::Unknown) g.bias_type = g.c_type;
        if (!is_float_type(g.bias_type))
            return std::string("GEMM bias dtype ") + to_string(g.bias_type);
        if (g.batch > 1) return std::string("batched GEMM with a bias epilogue");
    }
    // Leading dimensions at least what the row-major shapes need.
    g.lda = std::max(g.lda, std::max<std::int64_t>(g.trans_a ? g.m : g.k, 1));
    g.ldb = std::max(g.ldb, std::max<std::int64_t>(g.trans_b ? g.k : g.n, 1));
    g.ldc = std::max(g.ldc, std::max<std::int64_t>(g.n, 1));
    if (g.stride_a < 0 || g.stride_b < 0 || g.stride_c < 0)
        return std::string("negative GEMM batch stride");
    if (g.batch > 1 && g.stride_c == 0) g.stride_c = g.m * g.ldc;  // outputs never overlap
    for (std::int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch})
        if (v > INT_MAX) return std::string("GEMM size beyond cuBLAS's 32-bit arguments");
    return std::nullopt;
}

GemmExtents gemm_extents(const GemmRecipe& g) {
    GemmExtents e;
    e.a = (g.trans_a ? (g.k - 1) * g.lda + g.m : (g.m - 1) * g.lda + g.k) +
          (g.batch - 1) * g.stride_a;
    e.b = (g.trans_b ? (g.n - 1) * g.ldb + g.k : (g.k - 1) * g.ldb + g.n) +
          (g.batch - 1) * g.stride_b;
    e.c = (g.m - 1) * g.ldc + g.n + (g.batch - 1) * g.stride_c;
    e.bias = g.bias ? g.n : 0;
    return e;
}

BlasArgs column_major_args(const GemmRecipe& g) {
    BlasArgs a;
    // C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m): cuBLAS's A is the recipe's B and vice versa.
    a.transa = g.trans_b;
    a.transb = g.trans_a;
    a.m = g.n, a.n = g.m, a.k = g.k;
    a.lda = g.ldb, a.ldb = g.lda, a.ldc = g.ldc;
    a.stride_a = g.stride_b, a.stride_b = g.stride_a, a.stride_c = g.stride_c;
    a.batch = g.batch;
    // _cublasAdjustLdLevel3: cuBLAS checks leading dims even where a size of 1 makes them unused.
    if (a.n <= 1) a.ldc = std::max<std::int64_t>(a.m, 1);
    if (a.transa) {
        if (a.m <= 1) a.lda = std::max<std::int64_t>(a.k, 1);
    } else if (a.k <= 1) {
        a.lda = std::max<std::int64_t>(a.m, 1);
    }
    if (a.transb) {
        if (a.k <= 1) a.ldb = std::max<std::int64_t>(a.n, 1);
    } else if (a.n <= 1) {
        a.ldb = std::max<std::int64_t>(a.k, 1);
    }
    return a;
}

GemmLaunch::GemmLaunch(const GemmRecipe& normalized, const BlasContext& context, const void* a,
                       const void* b, void* c, const void* bias)
    : recipe_(normalized), args_(column_major_args(normalized)), a_(b), b_(a), c_(c), bias_(bias) {
    alpha_f_ = static_cast<float>(recipe_.alpha), beta_f_ = static_cast<float>(recipe_.beta);
    alpha_d_ = recipe_.alpha, beta_d_ = recipe_.beta;

    const bool batched_op =
        recipe_.op == "aten::bmm" || recipe_.op == "aten::baddbmm" || recipe_.batch > 1;
    // PyTorch's addmm takes the cuBLASLt bias path for a 1-D bias with beta 1 and sizes > 1, or
    // (newer PyTorch) where the recorded kernel shows it did.
    constexpr std::int64_t kLtLimit = 65535LL * 32;
    const bool sizes_take_lt = recipe_.m > 1 && recipe_.n > 1 && recipe_.k > 1;
    const bool bias_lt = recipe_.bias && bias != nullptr && recipe_.beta == 1.0 && !batched_op &&
                         (sizes_take_lt || recipe_.bias_epilogue_recorded) &&
                         recipe_.m < kLtLimit && recipe_.n < kLtLimit && recipe_.k < kLtLimit;

    std::ostringstream label;
    label << "gemm " << to_string(recipe_.a_type) << (recipe_.c_type != recipe_.a_type ? "->" : "")
          << (recipe_.c_type != recipe_.a_type ? to_string(recipe_.c_type) : "") << " m"
          << recipe_.m << " n" << recipe_.n << " k" << recipe_.k;
    if (recipe_.batch > 1) label << " b" << recipe_.batch;
    label << ' ' << op_char(args_.transa) << op_char(args_.transb);
    if (tf32(context)) label << " tf32";

    if (bias_lt || context.prefer_lt) {
        if (try_lt(context, bias_lt)) {
            label << (bias_lt ? " (cublasLt bias)" : " (cublasLt)");
            label_ = label.str();
            return;
        }
        note_ = "cuBLASLt offered no algorithm; ran through cuBLAS";
    } else if (recipe_.bias) {
        note_ = "bias not fused (PyTorch copies it into the output first); GEMM replayed with beta";
    }
    api_ = batched_op ? Api::GemmStridedBatched : Api::Gemm;
    label << (api_ == Api::Gemm ? " (cublas gemm)" : " (cublas strided batched)");
    label_ = label.str();
}

bool GemmLaunch::tf32(const BlasContext& context) const {
    return recipe_.a_type == DType::Float32 && (context.allow_tf32 || recipe_.tf32_recorded);
}

bool GemmLaunch::try_lt(const BlasContext& context, bool with_bias) {
    const cudaDataType_t ab_type = *cuda_data_type(recipe_.a_type);
    const cudaDataType_t c_type = *cuda_data_type(recipe_.c_type);
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    cudaDataType_t scale = CUDA_R_32F;
    if (recipe_.a_type == DType::Float64) {
        compute = CUBLAS_COMPUTE_64F, scale = CUDA_R_64F;
    } else if (tf32(context)) {
        compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    }
    LtMatmulDesc desc(compute, scale);
    desc.set(CUBLASLT_MATMUL_DESC_TRANSA, op(args_.transa));
    desc.set(CUBLASLT_MATMUL_DESC_TRANSB, op(args_.transb));
    if (with_bias) {
        desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
        desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_);
        if (recipe_.bias_type != recipe_.c_type)
            desc.set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, *cuda_data_type(recipe_.bias_type));
    }
    // PyTorch's CuBlasLtMatrixLayout(type, rows, cols, ld, transposed): stored shape is swapped
    // when the operand is transposed.
    const bool ta = args_.transa, tb = args_.transb;
    LtMatrixLayout a_layout(ab_type, ta ? args_.k : args_.m, ta ? args_.m : args_.k, args_.lda);
    LtMatrixLayout b_layout(ab_type, tb ? args_.n : args_.k, tb ? args_.k : args_.n, args_.ldb);
    LtMatrixLayout c_layout(c_type, args_.m, args_.n, args_.ldc);
    if (args_.batch > 1) {
        const auto batch = static_cast<std::int32_t>(args_.batch);
        a_layout.set(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch);
        b_layout.set(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch);
        c_layout.set(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch);
        a_layout.set(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, args_.stride_a);
        b_layout.set(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, args_.stride_b);
        c_layout.set(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, args_.stride_c);
    }
    auto preference = LtMatmulPreference::create();
    preference.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                   static_cast<std::uint64_t>(context.lt_workspace_bytes));
    preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(a_));
    preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(b_));
    preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_of(c_));
    if (with_bias) preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(bias_));

    cublasLtMatmulHeuristicResult_t heuristic{};
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        context.lt, desc.get(), a_layout.get(), b_layout.get(), c_layout.get(), c_layout.get(),
        preference.get(), 1, &heuristic, &returned);
    if (status != CUBLAS_STATUS_SUCCESS || returned == 0) return false;

    if (with_bias) beta_f_ = 0, beta_d_ = 0;  // the bias is added in the epilogue
    algo_ = heuristic.algo;
    desc_ = std::move(desc);
    a_layout_ = std::move(a_layout);
    b_layout_ = std::move(b_layout);
    c_layout_ = std::move(c_layout);
    api_ = Api::LtMatmul;
    return true;
}

void GemmLaunch::run(const BlasContext& context, cudaStream_t stream, void* workspace) const {
    const bool fp64 = recipe_.a_type == DType::Float64;
    const void* alpha =
        fp64 ? static_cast<const void*>(&alpha_d_) : static_cast<const void*>(&alpha_f_);
    const void* beta =
        fp64 ? static_cast<const void*>(&beta_d_) : static_cast<const void*>(&beta_f_);
    const auto& a = args_;

    if (api_ == Api::LtMatmul) {
        REPLAY_CUBLAS_CALL(cublasLtMatmul(context.lt, desc_.get(), alpha, a_, a_layout_.get(), b_,
                                          b_layout_.get(), beta, c_, c_layout_.get(), c_,
                                          c_layout_.get(), &algo_, workspace,
                                          context.lt_workspace_bytes, stream));
        return;
    }

    cublasHandle_t h = context.blas;
    // As getCurrentCUDABlasHandle(): the stream, then the workspace (setting the stream resets it).
    REPLAY_CUBLAS_CALL(cublasSetStream(h, stream));
    REPLAY_CUBLAS_CALL(cublasSetWorkspace(h, workspace, context.workspace_bytes));
    // fp32: TF32 only when allowed or recorded; fp16/bf16: default math, which allows
    // reduced-precision reductions (PyTorch's allow_fp16/bf16_reduced_precision_reduction
    // default True).
    const cublasMath_t math = tf32(context) ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    REPLAY_CUBLAS_CALL(cublasSetMathMode(h, math));

    const int m = static_cast<int>(a.m), n = static_cast<int>(a.n), k = static_cast<int>(a.k);
    const int lda = static_cast<int>(a.lda), ldb = static_cast<int>(a.ldb),
              ldc = static_cast<int>(a.ldc);
    const int batch = static_cast<int>(a.batch);
    const cudaDataType_t ab_type = *cuda_data_type(recipe_.a_type);
    const cudaDataType_t c_type = *cuda_data_type(recipe_.c_type);
    const bool plain = recipe_.c_type == recipe_.a_type;

    if (api_ == Api::Gemm) {
        if (recipe_.a_type == DType::Float32) {
            REPLAY_CUBLAS_CALL(cublasSgemm(
                h, op(a.transa), op(a.transb), m, n, k, &alpha_f_, static_cast<const float*>(a_),
                lda, static_cast<const float*>(b_), ldb, &beta_f_, static_cast<float*>(c_), ldc));
        } else if (recipe_.a_type == DType::Float64) {
            REPLAY_CUBLAS_CALL(cublasDgemm(
                h, op(a.transa), op(a.transb), m, n, k, &alpha_d_, static_cast<const double*>(a_),
                lda, static_cast<const double*>(b_), ldb, &beta_d_, static_cast<double*>(c_), ldc));
        } else {
            REPLAY_CUBLAS_CALL(cublasGemmEx(h, op(a.transa), op(a.transb), m, n, k, alpha, a_,
                                            ab_type, lda, b_, ab_type, ldb, beta, c_,
                                            plain ? ab_type : c_type, ldc, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT_TENSOR_OP));
        }
    } else {
        if (recipe_.a_type == DType::Float32) {
            REPLAY_CUBLAS_CALL(cublasSgemmStridedBatched(
                h, op(a.transa), op(a.transb), m, n, k, &alpha_f_, static_cast<const float*>(a_),
                lda, a.stride_a, static_cast<const float*>(b_), ldb, a.stride_b, &beta_f_,
                static_cast<float*>(c_), ldc, a.stride_c, batch));
        } else if (recipe_.a_type == DType::Float64) {
            REPLAY_CUBLAS_CALL(cublasDgemmStridedBatched(
                h, op(a.transa), op(a.transb), m, n, k, &alpha_d_, static_cast<const double*>(a_),
                lda, a.stride_a, static_cast<const double*>(b_), ldb, a.stride_b, &beta_d_,
                static_cast<double*>(c_), ldc, a.stride_c, batch));
        } else {
            REPLAY_CUBLAS_CALL(cublasGemmStridedBatchedEx(
                h, op(a.transa), op(a.transb), m, n, k, alpha, a_, ab_type, lda, a.stride_a, b_,
                ab_type, ldb, a.stride_b, beta, c_, plain ? ab_type : c_type, ldc, a.stride_c,
                batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
        }
    }
}

}  // namespace replay::cuda
