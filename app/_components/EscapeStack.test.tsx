import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { useEscape } from '../_lib/escape';
import { ExportMenu } from './ExportMenu';

/** Menus are on the page's Escape stack: one Escape closes the menu on top, not the viewer under it too. */
function Viewer({ onClose }: { onClose: () => void }) {
  useEscape(true, onClose);
  return <div data-testid="viewer" />;
}

it('closes an open export menu with one Escape and leaves the docked viewer open', async () => {
  const closeViewer = jest.fn();
  render(
    <>
      <Viewer onClose={closeViewer} />
      <ExportMenu conversationId="c-1" />
    </>,
  );
  const menu = screen.getByTestId('export-menu') as HTMLDetailsElement;
  act(() => {
    menu.open = true;
    menu.dispatchEvent(new Event('toggle'));
  });
  await waitFor(() => expect(menu.open).toBe(true));
  fireEvent.keyDown(document.body, { key: 'Escape' });
  expect(menu.open).toBe(false);
  expect(closeViewer).not.toHaveBeenCalled();
  act(() => menu.dispatchEvent(new Event('toggle')));
  fireEvent.keyDown(document.body, { key: 'Escape' });
  expect(closeViewer).toHaveBeenCalledTimes(1);
});
