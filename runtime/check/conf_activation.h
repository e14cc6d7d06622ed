/* What another op's check takes from the activation's (conf_activation.c):
 * the activations and their derivatives in double, for the feed-forward
 * layer (conf_feed_forward.c). GELU is the exact erf form, GELU tanh GPT-2's
 * approximation; ReLU'(0) = 0, as PyTorch. */
#ifndef CLFORMER_CONF_ACTIVATION_H
#define CLFORMER_CONF_ACTIVATION_H

#include "clformer.h"

double ref_act_value(double x, clformer_activation act);
double ref_act_grad(double x, clformer_activation act);

#endif
