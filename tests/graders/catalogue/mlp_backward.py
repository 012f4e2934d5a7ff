"""training-path/manual-backward: slips in dloss/dy, the ReLU and the parameter gradients."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle

CATALOGUE = Catalogue(
    grader="mlp_backward",
    task="training-path/manual-backward",
    reference=SOLUTIONS / "training-path" / "backward_correct.py",
    styles=(
        CorrectStyle(
            "one backward pass, a dict of gradients",
            """
def backward(x, w1, b1, w2, b2, t):
    z = x @ w1.T + b1
    h = z.clamp(min=0)
    y = h @ w2.T + b2
    n, o = y.shape
    dy = (y - t) * (2.0 / (n * o))
    dh = dy @ w2
    dz = torch.where(h > 0, dh, torch.zeros_like(dh))
    return {"w2": dy.T @ h, "b2": dy.sum(0), "w1": dz.T @ x, "b1": dz.sum(0)}

def grad_w2(x, w1, b1, w2, b2, t):
    return backward(x, w1, b1, w2, b2, t)["w2"]

def grad_b2(x, w1, b1, w2, b2, t):
    return backward(x, w1, b1, w2, b2, t)["b2"]

def grad_w1(x, w1, b1, w2, b2, t):
    return backward(x, w1, b1, w2, b2, t)["w1"]

def grad_b1(x, w1, b1, w2, b2, t):
    return backward(x, w1, b1, w2, b2, t)["b1"]
""",
        ),
        CorrectStyle(
            "einsum and a ones-vector bias gradient",
            """
def grad_w2(x, w1, b1, w2, b2, t):
    _, h, _ = forward(x, w1, b1, w2, b2)
    return torch.einsum("no,nh->oh", grad_y(x, w1, b1, w2, b2, t), h)

def grad_b2(x, w1, b1, w2, b2, t):
    dy = grad_y(x, w1, b1, w2, b2, t)
    return torch.ones(dy.shape[0], dtype=dy.dtype) @ dy

def grad_w1(x, w1, b1, w2, b2, t):
    z, _, _ = forward(x, w1, b1, w2, b2)
    dh = torch.einsum("no,oh->nh", grad_y(x, w1, b1, w2, b2, t), w2)
    return torch.einsum("nh,nd->hd", dh * (z > 0).to(dh.dtype), x)
""",
        ),
        CorrectStyle(
            "float64 throughout, cast back",
            """
_correct = {f.__name__: f for f in (grad_w2, grad_b2, grad_w1, grad_b1)}

def _wide(name, args):
    return _correct[name](*(a.double() for a in args)).to(args[0].dtype)

def grad_w2(*args):
    return _wide("grad_w2", args)

def grad_b2(*args):
    return _wide("grad_b2", args)

def grad_w1(*args):
    return _wide("grad_w1", args)

def grad_b1(*args):
    return _wide("grad_b1", args)
""",
        ),
        CorrectStyle(
            "mean written as a sum, ReLU mask from the output h",
            """
def grad_y(x, w1, b1, w2, b2, t):
    _, _, y = forward(x, w1, b1, w2, b2)
    return 2 * (y - t) / (y.shape[0] * y.shape[1])

def grad_z(x, w1, b1, w2, b2, t):
    _, h, _ = forward(x, w1, b1, w2, b2)
    return (grad_y(x, w1, b1, w2, b2, t) @ w2) * (h > 0).float().to(h.dtype)
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "mean over the batch only",
            "grad_w2",
            "not the batch size",
            """
def grad_y(x, w1, b1, w2, b2, t):
    _, _, y = forward(x, w1, b1, w2, b2)
    return 2 * (y - t) / x.shape[0]
""",
        ),
        CommonMistake(
            "no factor 2",
            "grad_b2",
            "factor 2",
            """
def grad_y(x, w1, b1, w2, b2, t):
    _, _, y = forward(x, w1, b1, w2, b2)
    return (y - t) / y.numel()
""",
        ),
        CommonMistake(
            "t - y instead of y - t",
            "grad_w1",
            "sign",
            """
def grad_y(x, w1, b1, w2, b2, t):
    _, _, y = forward(x, w1, b1, w2, b2)
    return 2 * (t - y) / y.numel()
""",
        ),
        CommonMistake(
            "no ReLU mask",
            "grad_w1",
            "skips the ReLU",
            """
def grad_z(x, w1, b1, w2, b2, t):
    return grad_y(x, w1, b1, w2, b2, t) @ w2
""",
        ),
        CommonMistake(
            "grad_w2 transposed",
            "grad_w2",
            "transposed",
            """
def grad_w2(x, w1, b1, w2, b2, t):
    _, h, _ = forward(x, w1, b1, w2, b2)
    return h.T @ grad_y(x, w1, b1, w2, b2, t)
""",
        ),
        CommonMistake(
            "grad_w2 from the pre-activation",
            "grad_w2",
            "pre-activation",
            """
def grad_w2(x, w1, b1, w2, b2, t):
    z, _, _ = forward(x, w1, b1, w2, b2)
    return grad_y(x, w1, b1, w2, b2, t).T @ z
""",
        ),
        CommonMistake(
            "bias gradient averaged over the batch",
            "grad_b1",
            "sum it over the batch",
            """
def grad_b1(x, w1, b1, w2, b2, t):
    return grad_z(x, w1, b1, w2, b2, t).mean(dim=0)
""",
        ),
    ),
)
