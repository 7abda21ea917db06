# Reference fixtures for metacog.stats from R psych (Debian r-cran-psych 2.2.9).
#
# Run from the repository root:
#   Rscript scripts/r/make_psych_fixtures.R
# Writes CSV files into tests/fixtures/psych/ (or $PSYCH_FIXTURE_DIR).
# Every data set is simulated here with a fixed seed, except psychTools' `ability`.
#
# Files per data set NAME:
#   data_NAME.csv   the 0/1 matrix (rows = observations/items, columns = raters/variables; NA = missing)
#   rho_NAME.csv    psych::tetrachoric(x)$rho (smoothed when psych smooths)
#   tau_NAME.csv    psych::tetrachoric(x)$tau
#   rawrho_NAME.csv psych::tetrachoric(x, smooth = FALSE)$rho (the per-pair fits)
# Factor analyses (fa(x, cor = "tet", fm = "minres")):
#   fa_NAME_nfK_ROT.csv  loadings (columns MR*), h2 (= communality), u2 (= uniquenesses),
#                        com (= communalities = 1 - fitted Psi); plus
#   faval_NAME_nfK_ROT.csv  values (reduced-matrix eigenvalues), e.values, and Vaccounted rows
#   faphi_NAME_nf2_oblimin.csv  factor correlations for oblimin
# Parallel analysis (fa.parallel(x, cor = "tet", n.iter = 20)):
#   parallel_NAME.csv  observed fa.values and pc.values (the simulated parts are random and
#                      are not compared), plus psych's nfact / ncomp for the record.
suppressMessages({
  library(psych)
  library(psychTools)
  library(GPArotation)
})

out <- Sys.getenv("PSYCH_FIXTURE_DIR", "tests/fixtures/psych")
dir.create(out, recursive = TRUE, showWarnings = FALSE)
wcsv <- function(x, name) write.csv(x, file.path(out, name), row.names = TRUE)

versions <- data.frame(
  package = c("R", "psych", "psychTools", "GPArotation"),
  version = c(paste(R.version$major, R.version$minor, sep = "."),
              as.character(packageVersion("psych")),
              as.character(packageVersion("psychTools")),
              as.character(packageVersion("GPArotation")))
)
write.csv(versions, file.path(out, "versions.csv"), row.names = FALSE)

# One-factor probit data: item (row) latent theta, rater (column) loading and threshold.
probit1 <- function(n, loadings, taus, miss = 0) {
  k <- length(loadings)
  theta <- rnorm(n)
  x <- matrix(0L, n, k)
  for (j in seq_len(k)) {
    z <- loadings[j] * theta + sqrt(1 - loadings[j]^2) * rnorm(n)
    x[, j] <- as.integer(z > taus[j])
  }
  if (miss > 0) x[matrix(runif(n * k) < miss, n, k)] <- NA
  colnames(x) <- sprintf("m%02d", seq_len(k))
  rownames(x) <- sprintf("i%04d", seq_len(n))
  x
}

# Two-factor probit data (simple structure with a cross-loading), for nfactors = 2.
probit2 <- function(n) {
  L <- rbind(c(.8, 0), c(.7, 0), c(.75, .1), c(.6, 0), c(.65, 0),
             c(0, .8), c(0, .7), c(.1, .7), c(0, .6), c(.2, .65))
  phi <- 0.3
  f1 <- rnorm(n)
  f2 <- phi * f1 + sqrt(1 - phi^2) * rnorm(n)
  taus <- seq(-1.2, 1.2, length.out = nrow(L))
  x <- matrix(0L, n, nrow(L))
  for (j in seq_len(nrow(L))) {
    common <- L[j, 1] * f1 + L[j, 2] * f2
    h2 <- L[j, 1]^2 + L[j, 2]^2 + 2 * phi * L[j, 1] * L[j, 2]
    z <- common + sqrt(1 - h2) * rnorm(n)
    x[, j] <- as.integer(z > taus[j])
  }
  colnames(x) <- sprintf("v%02d", seq_len(nrow(L)))
  rownames(x) <- sprintf("i%04d", seq_len(n))
  x
}

tet_fixture <- function(x, name) {
  write.csv(x, file.path(out, paste0("data_", name, ".csv")), row.names = TRUE, na = "")
  t1 <- suppressWarnings(suppressMessages(tetrachoric(x)))
  t0 <- suppressWarnings(suppressMessages(tetrachoric(x, smooth = FALSE)))
  wcsv(t1$rho, paste0("rho_", name, ".csv"))
  wcsv(t0$rho, paste0("rawrho_", name, ".csv"))
  wcsv(data.frame(tau = t1$tau), paste0("tau_", name, ".csv"))
  ev <- min(eigen(t0$rho, only.values = TRUE)$values)
  cat(sprintf("%-12s n=%4d k=%3d  min eigen (unsmoothed) = %.3g\n", name, nrow(x), ncol(x), ev))
  invisible(t1)
}

fa_fixture <- function(x, name, nf, rot) {
  f <- suppressWarnings(suppressMessages(
    fa(x, nfactors = nf, fm = "minres", cor = "tet", rotate = rot, warnings = FALSE)))
  L <- unclass(f$loadings)
  tab <- data.frame(L, h2 = f$communality, u2 = f$uniquenesses, com = f$communalities)
  wcsv(tab, sprintf("fa_%s_nf%d_%s.csv", name, nf, rot))
  va <- f$Vaccounted
  vals <- data.frame(values = f$values, e.values = f$e.values)
  wcsv(vals, sprintf("faval_%s_nf%d_%s.csv", name, nf, rot))
  wcsv(va, sprintf("favacc_%s_nf%d_%s.csv", name, nf, rot))
  if (!is.null(f$Phi)) wcsv(f$Phi, sprintf("faphi_%s_nf%d_%s.csv", name, nf, rot))
  invisible(f)
}

par_fixture <- function(x, name) {
  set.seed(7)
  p <- suppressWarnings(suppressMessages(
    fa.parallel(x, cor = "tet", n.iter = 20, plot = FALSE)))
  tab <- data.frame(fa.values = p$fa.values, pc.values = p$pc.values,
                    psych_nfact = p$nfact, psych_ncomp = p$ncomp)
  wcsv(tab, paste0("parallel_", name, ".csv"))
}

# 1. One-factor probit, varied thresholds, complete data, some zero cells (extreme thresholds).
set.seed(20260101)
x <- probit1(400, loadings = seq(.45, .9, length.out = 12),
             taus = c(-2.6, -2, -1.5, -1, -.5, 0, .3, .7, 1.2, 1.7, 2.2, 2.7))
tet_fixture(x, "sim1")
fa_fixture(x, "sim1", 1, "none")
par_fixture(x, "sim1")

# 2. The same design with 8% missing values (global thresholds vs pairwise tables).
set.seed(20260102)
x <- probit1(300, loadings = seq(.3, .85, length.out = 10),
             taus = seq(-2.2, 2.2, length.out = 10), miss = 0.08)
tet_fixture(x, "sim1miss")
fa_fixture(x, "sim1miss", 1, "none")

# 3. A non-positive-definite case: few observations, many raters, extreme thresholds.
#    The seed is searched for deterministically until psych has to smooth.
for (s in 1:500) {
  set.seed(1000 + s)
  x <- probit1(30, loadings = rep(c(.95, .9, .85), length.out = 14),
               taus = seq(-1.8, 1.8, length.out = 14))
  if (any(apply(x, 2, sd) == 0)) next
  r0 <- suppressWarnings(suppressMessages(tetrachoric(x, smooth = FALSE)$rho))
  if (min(eigen(r0, only.values = TRUE)$values) < .Machine$double.eps) break
}
tet_fixture(x, "npd")
fa_fixture(x, "npd", 1, "none")

# 4. psychTools' ability (1525 x 16, with missing values).
data(ability, package = "psychTools")
x <- as.matrix(ability)
rownames(x) <- sprintf("p%04d", seq_len(nrow(x)))
tet_fixture(x, "ability")
fa_fixture(x, "ability", 1, "none")
fa_fixture(x, "ability", 2, "none")
fa_fixture(x, "ability", 2, "varimax")
fa_fixture(x, "ability", 2, "oblimin")
par_fixture(x, "ability")

# 5. Two-factor probit data for rotations.
set.seed(20260105)
x <- probit2(600)
tet_fixture(x, "sim2")
fa_fixture(x, "sim2", 2, "none")
fa_fixture(x, "sim2", 2, "varimax")
fa_fixture(x, "sim2", 2, "oblimin")
fa_fixture(x, "sim2", 3, "oblimin")

# 6. Random designs (shapes, loadings, thresholds, missingness), for generality.
set.seed(20260106)
for (r in 1:6) {
  n <- sample(c(40, 80, 150, 300, 700), 1)
  k <- sample(3:9, 1)
  lo <- runif(k, -.3, .95)
  ta <- runif(k, -2.2, 2.2)
  miss <- sample(c(0, 0, .05, .2), 1)
  x <- probit1(n, lo, ta, miss)
  for (j in which(apply(x, 2, sd, na.rm = TRUE) == 0)) {
    i <- which(!is.na(x[, j]))[1]
    x[i, j] <- 1L - x[i, j]
  }
  tet_fixture(x, sprintf("rand%d", r))
  # fa() can fail on random designs (e.g. svd of a degenerate smc); such cases are skipped.
  if (k >= 4) tryCatch(fa_fixture(x, sprintf("rand%d", r), 1, "none"),
                       error = function(e) cat("  fa skipped:", conditionMessage(e), "\n"))
}
cat("fixtures written to", out, "\n")
