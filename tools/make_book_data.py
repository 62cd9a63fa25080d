"""Write small synthetic ``paddle.dataset`` files, in the original formats and under the original names, for
the fluid book tests (fit_a_line, image_classification, word2vec, recommender_system,
understand_sentiment, label_semantic_roles, machine_translation, rnn_encoder_decoder, recognize_digits).

    python tools/make_book_data.py DIR [--scale 0.01] [--modules cifar,imdb,...]
    MINIFLUID_DATA_HOME=DIR python -m minifluid.compat test_fit_a_line.py

The files are a ``--scale`` fraction of the real ones (at least a few samples each), with the real
vocabulary shapes where the book tests depend on them: dictionary cutoffs still keep words, the
conll05 embedding matches its word dictionary at the book's 32 dimensions, wmt14's dictionaries hold
fewer than the book's 30,000 words. Their MD5s are not Paddle's, so each file warns once when first read.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dataset_files  # noqa: E402

BOOK_MODULES = ['uci_housing', 'cifar', 'imikolov', 'movielens', 'imdb', 'conll05', 'wmt14', 'mnist']
ALL_MODULES = BOOK_MODULES + ['wmt16', 'flowers']


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('folder')
    parser.add_argument('--scale', type=float, default=0.01)
    parser.add_argument('--modules', default=','.join(BOOK_MODULES),
                        help='comma-separated; also wmt16, flowers (needs Pillow and scipy), or "all"')
    args = parser.parse_args(argv)
    modules = ALL_MODULES if args.modules == 'all' else [m for m in args.modules.split(',') if m]
    unknown = sorted(set(modules) - set(ALL_MODULES))
    if unknown:
        parser.error('unknown modules %s (choose from %s)' % (unknown, ', '.join(ALL_MODULES)))
    dataset_files.synth(args.folder, modules, scale=args.scale)
    for module in sorted(os.listdir(args.folder)):
        folder = os.path.join(args.folder, module)
        for name in sorted(os.listdir(folder)):
            print('%10d  %s' % (os.path.getsize(os.path.join(folder, name)), os.path.join(folder, name)))
    print('now: export MINIFLUID_DATA_HOME=%s' % os.path.abspath(args.folder))


if __name__ == '__main__':
    main()
