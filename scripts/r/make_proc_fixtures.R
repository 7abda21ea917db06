# Reference fixtures for metacog.stats.auroc_ci from R pROC (Debian r-cran-proc).
#
# Run from the repository root:
#   Rscript scripts/r/make_proc_fixtures.R
# Writes CSV files into tests/fixtures/proc/ (or $PROC_FIXTURE_DIR):
#   data_NAME.csv  columns y (0/1 label) and score, simulated here with a fixed seed
#   delong.csv     one row per data set: name, auc, var (DeLong), ci_low, ci_high
#                  (pROC::ci.auc(method = "delong", conf.level = 0.95), controls < cases fixed,
#                  so pROC never flips the direction), n_pos, n_neg
#   versions.csv   R and pROC versions
suppressMessages(library(pROC))

out <- Sys.getenv("PROC_FIXTURE_DIR", "tests/fixtures/proc")
dir.create(out, recursive = TRUE, showWarnings = FALSE)
set.seed(20260313)

sets <- list()
# continuous scores with a moderate shift
y <- c(rep(1L, 40), rep(0L, 60))
sets$normal <- data.frame(y = y, score = rnorm(100, mean = 0.8 * y))
# heavily tied scores on a 0.1 grid (like verbal confidence), unbalanced classes
y <- c(rep(1L, 15), rep(0L, 85))
sets$ties <- data.frame(y = y, score = round(pmin(1, pmax(0, rnorm(100, 0.55 + 0.15 * y, 0.2))), 1))
# a small sample: 6 positives, 9 negatives
y <- c(rep(1L, 6), rep(0L, 9))
sets$small <- data.frame(y = y, score = rnorm(15, mean = 0.5 * y))
# near-perfect separation, so the upper end is clipped at 1
y <- c(rep(1L, 25), rep(0L, 25))
sets$high <- data.frame(y = y, score = rnorm(50, mean = 3 * y))
# below chance
y <- c(rep(1L, 30), rep(0L, 50))
sets$below <- data.frame(y = y, score = rnorm(80, mean = -0.6 * y))
# binary score (a yes/no judgment), the book's common case
y <- c(rep(1L, 35), rep(0L, 65))
sets$binary <- data.frame(y = y, score = as.integer(runif(100) < 0.4 + 0.3 * y))

rows <- list()
for (name in names(sets)) {
  d <- sets[[name]]
  write.csv(d, file.path(out, sprintf("data_%s.csv", name)), row.names = FALSE)
  r <- roc(d$y, d$score, levels = c(0, 1), direction = "<", quiet = TRUE)
  ci <- ci.auc(r, method = "delong", conf.level = 0.95)
  rows[[name]] <- data.frame(name = name, auc = as.numeric(auc(r)), var = var(r, method = "delong"),
                             ci_low = ci[1], ci_high = ci[3],
                             n_pos = sum(d$y == 1), n_neg = sum(d$y == 0))
}
write.csv(do.call(rbind, rows), file.path(out, "delong.csv"), row.names = FALSE)
write.csv(data.frame(package = c("R", "pROC"),
                     version = c(paste(R.version$major, R.version$minor, sep = "."),
                                 as.character(packageVersion("pROC")))),
          file.path(out, "versions.csv"), row.names = FALSE)
