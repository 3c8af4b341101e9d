"""Models capture_trace.py builds by hand (no transformers config covers them), random weights.

Each takes the transformers models' keyword arguments (inputs, labels=None) and returns an object
with .logits and .loss, so that capture_trace.py's steps treat every model alike:
  lstm_language_model  Embedding, stacked LSTM (cuDNN's RNN kernels), vocabulary projection
  dlrm                 DLRM-shaped recommender: EmbeddingBag tables of variable-length bags
                       (offsets), bottom and top MLPs, pairwise dot interaction (bmm + an index)
  gcn                  graph convolutional network: messages gathered with index_select and
                       summed with index_add_ and scatter_add_ over a random graph's edges
  unet                 diffusion-style UNet: GroupNorm, SiLU, 3x3 convolutions, a timestep
                       embedding, self-attention at the lowest resolution, nearest upsampling
  mlp_fp8              Linear-GELU-Linear blocks whose GEMMs run in float8 (e4m3) through
                       torch._scaled_mm with per-tensor scales, as fp8 inference stacks do
"""
import math
import types


def outputs(logits, labels, loss_fn):
    """The transformers models' output: .logits and .loss (loss_fn of the fp32 logits and the
    labels; None without labels)."""
    loss = None if labels is None else loss_fn(logits.float(), labels)
    return types.SimpleNamespace(logits=logits, loss=loss)


def lstm_language_model(torch, vocab, hidden, layers):
    class LstmLanguageModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, hidden)
            self.lstm = torch.nn.LSTM(hidden, hidden, num_layers=layers, batch_first=True)
            self.head = torch.nn.Linear(hidden, vocab)

        def forward(self, input_ids, labels=None, use_cache=False):
            logits = self.head(self.lstm(self.embed(input_ids))[0])
            return outputs(logits, labels,
                           lambda lg, lb: torch.nn.functional.cross_entropy(lg.flatten(0, 1), lb.flatten()))
    return LstmLanguageModel()


DLRM_DENSE = 13  # Criteo's dense features


def dlrm(torch, tables, rows, dim):
    nn = torch.nn

    class Dlrm(nn.Module):
        def __init__(self):
            super().__init__()
            self.bags = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
            self.bottom = nn.Sequential(nn.Linear(DLRM_DENSE, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                        nn.Linear(256, dim), nn.ReLU())
            n = tables + 1
            self.register_buffer("pairs", torch.triu_indices(n, n, offset=1), persistent=False)
            self.top = nn.Sequential(nn.Linear(dim + n * (n - 1) // 2, 1024), nn.ReLU(), nn.Linear(1024, 512),
                                     nn.ReLU(), nn.Linear(512, 1))

        def forward(self, dense, indices, offsets, labels=None):
            x = self.bottom(dense)
            pooled = [bag(i, o) for bag, i, o in zip(self.bags, indices, offsets)]
            features = torch.stack([x] + [p.to(x.dtype) for p in pooled], dim=1)  # batch, n, dim
            interactions = torch.bmm(features, features.transpose(1, 2))
            pairs = interactions[:, self.pairs[0], self.pairs[1]]  # the upper triangle: aten::index
            logits = self.top(torch.cat([x, pairs], dim=1)).squeeze(1)
            return outputs(logits, labels, torch.nn.functional.binary_cross_entropy_with_logits)
    return Dlrm()


def dlrm_inputs(torch, device, batch, tables, rows, max_bag, float_dtype):
    """Dense features, and per table a bag of 1..max_bag rows per sample (offsets), drawn from a
    skewed (power-law-like) distribution as recommendation traffic is."""
    dense = torch.randn(batch, DLRM_DENSE, device=device, dtype=float_dtype)
    indices, offsets = [], []
    for _ in range(tables):
        lengths = torch.randint(1, max_bag + 1, (batch,), device=device)
        offsets.append(torch.cumsum(lengths, 0) - lengths)
        total = int(lengths.sum())
        indices.append((torch.rand(total, device=device) ** 3 * rows).long().clamp_(max=rows - 1))
    labels = torch.randint(0, 2, (batch,), device=device).float()
    inputs = {"dense": dense, "indices": indices, "offsets": offsets}
    return inputs, dict(inputs, labels=labels)


def gcn(torch, features, hidden, classes, layers):
    nn = torch.nn

    class Gcn(nn.Module):
        def __init__(self):
            super().__init__()
            sizes = [features] + [hidden] * layers
            self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
            self.out = nn.Linear(hidden, classes)

        def forward(self, x, edges, labels=None):
            src, dst = edges[0], edges[1]
            nodes = x.shape[0]
            degree = torch.zeros(nodes, device=x.device).index_add_(0, dst, torch.ones_like(dst, dtype=torch.float))
            norm = degree.clamp(min=1).rsqrt()
            weight = (norm.index_select(0, src) * norm.index_select(0, dst)).unsqueeze(1)
            for i, lin in enumerate(self.lins):
                h = lin(x)
                messages = (h.index_select(0, src) * weight).to(h.dtype)
                if i % 2 == 0:
                    x = h.new_zeros(h.shape).index_add_(0, dst, messages)
                else:  # the same sum as PyG's scatter: an expanded (stride-0) index
                    x = h.new_zeros(h.shape).scatter_add_(0, dst.unsqueeze(1).expand_as(messages), messages)
                x = torch.relu(x)
            return outputs(self.out(x), labels, torch.nn.functional.cross_entropy)
    return Gcn()


def gcn_inputs(torch, device, nodes, degree, features, classes, float_dtype):
    x = torch.randn(nodes, features, device=device, dtype=float_dtype)
    edges = torch.randint(0, nodes, (2, nodes * degree), device=device)
    labels = torch.randint(0, classes, (nodes,), device=device)
    return {"x": x, "edges": edges}, {"x": x, "edges": edges, "labels": labels}


def unet(torch, channels=(128, 256, 512), latent=4, heads=8):
    nn = torch.nn
    F = torch.nn.functional
    temb_dim = channels[0] * 4

    class ResBlock(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.norm1, self.conv1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.temb = nn.Linear(temb_dim, cout)
            self.norm2, self.conv2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x, temb):
            h = self.conv1(F.silu(self.norm1(x)))
            h = h + self.temb(F.silu(temb))[:, :, None, None]
            h = self.conv2(F.silu(self.norm2(h)))
            return self.skip(x) + h

    class Attention(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.norm, self.qkv, self.proj = nn.GroupNorm(32, c), nn.Linear(c, 3 * c), nn.Linear(c, c)

        def forward(self, x):
            b, c, hgt, wid = x.shape
            t = self.norm(x).flatten(2).transpose(1, 2)  # batch, pixels, channels
            q, k, v = self.qkv(t).view(b, -1, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, -1, c)
            return x + self.proj(a).transpose(1, 2).reshape(b, c, hgt, wid)

    class Unet(nn.Module):
        def __init__(self):
            super().__init__()
            self.time = nn.Sequential(nn.Linear(channels[0], temb_dim), nn.SiLU(), nn.Linear(temb_dim, temb_dim))
            self.conv_in = nn.Conv2d(latent, channels[0], 3, padding=1)
            self.down, self.downsample = nn.ModuleList(), nn.ModuleList()
            c = channels[0]
            for i, cout in enumerate(channels):
                self.down.append(nn.ModuleList([ResBlock(c, cout), ResBlock(cout, cout)]))
                c = cout
                last = i == len(channels) - 1
                self.downsample.append(nn.Identity() if last else nn.Conv2d(c, c, 3, stride=2, padding=1))
            self.mid1, self.attn, self.mid2 = ResBlock(c, c), Attention(c), ResBlock(c, c)
            self.up, self.upsample = nn.ModuleList(), nn.ModuleList()
            for i, skip in enumerate(reversed(channels)):
                self.up.append(nn.ModuleList([ResBlock(c + skip, skip), ResBlock(skip, skip)]))
                c = skip
                last = i == len(channels) - 1
                self.upsample.append(nn.Identity() if last else nn.Conv2d(c, c, 3, padding=1))
            self.norm_out, self.conv_out = nn.GroupNorm(32, c), nn.Conv2d(c, latent, 3, padding=1)

        def embed_time(self, t):
            half = channels[0] // 2
            freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
            angles = t.float()[:, None] * freqs[None]
            return self.time(torch.cat([angles.sin(), angles.cos()], dim=1).to(self.conv_in.weight.dtype))

        def forward(self, latents, timesteps, labels=None):
            temb = self.embed_time(timesteps)
            h = self.conv_in(latents)
            skips = []
            for blocks, down in zip(self.down, self.downsample):
                for block in blocks:
                    h = block(h, temb)
                skips.append(h)
                h = down(h)
            h = self.mid2(self.attn(self.mid1(h, temb)), temb)
            for blocks, up in zip(self.up, self.upsample):
                h = torch.cat([h, skips.pop()], dim=1)
                for block in blocks:
                    h = block(h, temb)
                if not isinstance(up, nn.Identity):
                    h = up(F.interpolate(h, scale_factor=2.0, mode="nearest"))
            noise = self.conv_out(F.silu(self.norm_out(h)))
            return outputs(noise, labels, lambda n, target: F.mse_loss(n, target.float()))
    return Unet()


def unet_inputs(torch, device, batch, side, float_dtype, latent=4):
    latents = torch.randn(batch, latent, side, side, device=device, dtype=float_dtype)
    timesteps = torch.randint(0, 1000, (batch,), device=device)
    noise = torch.randn_like(latents)
    return ({"latents": latents, "timesteps": timesteps},
            {"latents": latents, "timesteps": timesteps, "labels": noise})


FP8_MAX = 448.0  # the largest float8_e4m3fn value


def mlp_fp8(torch, hidden, layers):
    """Weights quantised once to float8_e4m3fn with a per-tensor scale; each forward quantises its
    activation (amax / 448) and multiplies with torch._scaled_mm into bf16."""
    nn = torch.nn

    class Fp8Linear(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            w = torch.randn(cout, cin) / math.sqrt(cin)
            scale = w.abs().max().float() / FP8_MAX
            self.register_buffer("weight", (w / scale).to(torch.float8_e4m3fn))  # out, in: row-major
            self.register_buffer("weight_scale", scale.reshape(()))
            self.bias = nn.Parameter(torch.zeros(cout, dtype=torch.bfloat16))

        def forward(self, x):
            rows = x.reshape(-1, x.shape[-1])
            scale = (rows.abs().amax().float() / FP8_MAX).clamp(min=1e-12)
            xq = (rows / scale).to(torch.float8_e4m3fn)
            y = torch._scaled_mm(xq, self.weight.t(), scale_a=scale, scale_b=self.weight_scale,
                                 bias=self.bias, out_dtype=torch.bfloat16)
            return y.reshape(*x.shape[:-1], -1)

    class MlpFp8(nn.Module):
        def __init__(self):
            super().__init__()
            blocks = []
            for _ in range(layers):
                blocks += [Fp8Linear(hidden, 4 * hidden), nn.GELU(), Fp8Linear(4 * hidden, hidden)]
            self.blocks = nn.Sequential(*blocks)

        def forward(self, x):  # like capture_trace.py's mlp: the activations, no loss
            return self.blocks(x)
    return MlpFp8()
