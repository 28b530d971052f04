// Stacked LSTM language model (Zaremba et al., "Recurrent Neural Network Regularization", 2014), one training step.
#include <string>
#include <vector>

#include "datasets/recurrent.h"
#include "datasets/registry.h"

namespace goenv {
namespace {

// Groups: 0 the embedding, 1..layers the LSTM layers, layers + 1 the softmax.
GraphPtr build_rnnlm(const GraphParams& params, int layers) {
  const int batch = int_param(params, "batch_size", 1, 1 << 16);
  const int steps = int_param(params, "seq_len", 1, 1 << 14);
  const int hidden = int_param(params, "hidden", 1, 1 << 16);
  const int vocab = int_param(params, "vocab", 2, 1 << 24);
  TrainingGraphBuilder t("rnnlm-" + std::to_string(layers));
  t.set_scope("embedding");
  const Tensor ids = t.input({batch, steps}, "token_ids", 0);
  const LoopEmbedding embedding = loop_embedding(t, "table", vocab, hidden, batch, steps, 0);
  std::vector<LstmLayer> lstm;
  lstm.reserve(layers);
  for (int l = 0; l < layers; ++l) lstm.emplace_back(t, "lstm_" + std::to_string(l), hidden, hidden, batch, steps, l + 1);
  const int softmax = layers + 1;
  t.set_scope("softmax");
  const LoopWeight projection = loop_weight(t, "projection", hidden, vocab, batch, steps, softmax);

  for (int s = 0; s < steps; ++s) {
    t.set_scope("embedding/t" + std::to_string(s));
    Tensor x = embedding_lookup(t, ids, embedding, 0);
    for (LstmLayer& layer : lstm) x = layer.step({x});
    t.set_scope("softmax/t" + std::to_string(s));
    t.softmax_cross_entropy(loop_matmul(t, x, projection, softmax), softmax);
  }
  return std::move(t).finish();
}

GraphFamily rnnlm_family(int layers) {
  const std::string n = std::to_string(layers);
  return GraphFamily{/*name=*/"rnnlm-" + n,
                     /*description=*/n + "-layer LSTM language model training step, " + n + " GPUs",
                     /*default_cluster=*/n + "xgpu-nvlink",
                     /*defaults=*/{{"batch_size", 64}, {"seq_len", 40}, {"hidden", 2048}, {"vocab", 32768}},
                     /*build=*/[layers](const GraphParams& params) { return build_rnnlm(params, layers); }};
}

}  // namespace

GOENV_REGISTER_GRAPH_FAMILY(rnnlm_2_registered, rnnlm_family(2))
GOENV_REGISTER_GRAPH_FAMILY(rnnlm_4_registered, rnnlm_family(4))
GOENV_REGISTER_GRAPH_FAMILY(rnnlm_8_registered, rnnlm_family(8))

}  // namespace goenv
