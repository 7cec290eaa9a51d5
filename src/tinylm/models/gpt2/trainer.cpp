#include "tinylm/models/gpt2/trainer.h"

#include <memory>

#include "tinylm/backend/cpu.h"
#include "tinylm/models/gpt2/train_steps.h"

namespace tinylm::gpt2 {

template <class T>
struct BasicTrainer<T>::Impl : TrainSteps<T, backend::Cpu> {
  using TrainSteps<T, backend::Cpu>::TrainSteps;
};

template <class T>
BasicTrainer<T>::BasicTrainer(const Config& config, TrainerOptions options)
    : impl_(std::make_unique<Impl>(config, options)) {}
template <class T>
BasicTrainer<T>::~BasicTrainer() = default;
template <class T>
BasicTrainer<T>::BasicTrainer(BasicTrainer&&) noexcept = default;
template <class T>
BasicTrainer<T>& BasicTrainer<T>::operator=(BasicTrainer&&) noexcept = default;

template <class T>
const Config& BasicTrainer<T>::config() const {
  return impl_->config;
}
template <class T>
const TrainerOptions& BasicTrainer<T>::options() const {
  return impl_->options;
}
template <class T>
const ParamLayout& BasicTrainer<T>::layout() const {
  return impl_->layout;
}
template <class T>
size_t BasicTrainer<T>::num_params() const {
  return impl_->layout.size();
}
template <class T>
size_t BasicTrainer<T>::activation_bytes() const {
  return impl_->arena.capacity();
}
template <class T>
void BasicTrainer<T>::set_dropout(float rate) {
  Impl::check_dropout(rate);
  impl_->options.dropout = rate;
}
template <class T>
T BasicTrainer<T>::forward(std::span<const T> params, std::span<const int32_t> inputs,
                           std::span<const int32_t> targets, DropoutKey key) {
  return impl_->forward(params.data(), params.size(), inputs, targets, key);
}
template <class T>
void BasicTrainer<T>::backward(std::span<T> grads, float loss_scale, GradMode mode,
                               const GradDone& done) {
  impl_->backward(grads.data(), grads.size(), loss_scale, mode == GradMode::accumulate, done);
}
template <class T>
std::span<const T> BasicTrainer<T>::logits() const {
  return {impl_->logits, static_cast<size_t>(impl_->BT * impl_->V)};
}
template <class T>
std::span<const T> BasicTrainer<T>::position_losses() const {
  return {impl_->losses, static_cast<size_t>(impl_->BT)};
}
template <class T>
const TrainerProfile& BasicTrainer<T>::profile() const {
  return impl_->prof;
}
template <class T>
void BasicTrainer<T>::reset_profile() {
  impl_->prof = {};
}

template class BasicTrainer<float>;
template class BasicTrainer<double>;

}  // namespace tinylm::gpt2
